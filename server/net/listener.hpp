#pragma once
// The listening TCP socket. Blocking models accept from it with a short poll so they notice
// a stop; event-loop models hand its descriptor to Boost.Asio.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace net {

// The address to bind for a --bind or --admin-bind value: "localhost" is 127.0.0.1 (IPv4, as
// the listener is); anything else as written.
std::string numeric_bind(const std::string& bind_address);

class Listener {
 public:
  // Binds and listens; throws std::runtime_error with the reason (e.g. port in use).
  Listener(const std::string& bind_address, std::uint16_t port);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // A connected socket, or -1 if none arrived within `wait` (or none could be accepted, e.g.
  // out of descriptors, in which case it waits `wait` before returning).
  int accept_for(std::chrono::milliseconds wait);
  // Hands the descriptor over (to an Asio acceptor); the Listener no longer closes it.
  int release();
  std::uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

// Turns away connections the server will not serve (too many open already): sends the reply,
// half-closes, then reads and discards whatever the client still sends until it closes or a
// grace period ends. Closing at once with the client's request unread would make the kernel
// send a reset instead of a FIN, and a client that reads to EOF would see "connection reset"
// instead of the reply. One helper thread, started on the first refusal, does the waiting, so
// neither an event loop nor an accepting thread ever waits on a refused client.
//
// On a TLS port (`tls`) a fatal TLS alert goes instead of the reply: a TLS client cannot read
// plaintext (OpenSSL calls it "wrong version number") but reports an alert as one. No TLS state
// is needed: before the handshake a record header, and so an alert record, is plaintext.
class Refuser {
 public:
  explicit Refuser(bool tls, std::chrono::milliseconds grace = std::chrono::milliseconds(2000),
                   std::size_t max_lingering = 256)
      : tls_(tls), grace_(grace), max_lingering_(max_lingering) {}
  ~Refuser();
  Refuser(const Refuser&) = delete;
  Refuser& operator=(const Refuser&) = delete;

  // Takes over `fd`. Never blocks: the reply is short and a fresh socket's send buffer empty.
  // On a TLS port the alert goes instead of `reply`.
  // Beyond `max_lingering` refusals in their grace period, closes at once (a flood of
  // connections must not pile up descriptors here either).
  void refuse(int fd, const std::string& reply);
  // Refuses `fd` with "Server busy" because `max_connections` are open already
  // (--max-connections); logs the first such refusal and every thousandth after it.
  void refuse_busy(int fd, std::size_t max_connections);
  // How many connections were refused so far.
  std::size_t refused() const;

 private:
  struct Lingering {
    int fd;
    std::chrono::steady_clock::time_point until;
  };
  void run();

  const bool tls_;
  const std::chrono::milliseconds grace_;
  const std::size_t max_lingering_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Lingering> lingering_;
  std::size_t refused_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace net
