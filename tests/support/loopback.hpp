#pragma once
// TCP sockets on 127.0.0.1 for tests, in one place: the clients of tests/support (RawClient,
// the wire client, the server's start-up probe), the freezing proxy, and the fake servers of
// the client's tests (tests/client), which link only this (exchange-test-loopback) of the
// support library. POSIX only: nothing of the server or the client.
namespace testing_support {

// A TCP socket connected to the IPv4 `address` and `port`, or -1 with errno set. A
// `receive_buffer` > 0 fixes SO_RCVBUF before connecting (a small window makes the peer's
// writes stall early, as behind a slow reader).
int try_connect(const char* address, unsigned short port, int receive_buffer = 0);

// Connected to 127.0.0.1:`port`, or throws std::runtime_error naming the port and the reason.
int connect_loopback(unsigned short port, int receive_buffer = 0);

// A socket bound to 127.0.0.1 on a port the kernel picks (written to `port`), not listening;
// throws std::runtime_error if it cannot be made.
int bind_loopback(unsigned short& port);

// The same, listening with `backlog`.
int listen_loopback(unsigned short& port, int backlog);

}  // namespace testing_support
