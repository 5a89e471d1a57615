// How to reach a server: timeouts, TLS, and who logs on. One value passed to everything that
// opens a connection (request_once, Session, SessionPool, Failover, bench's Targets).
#pragma once

#include <chrono>
#include <memory>
#include <string>

namespace exch::net {

class TlsClient;

struct Timeouts {
  std::chrono::milliseconds connect{5000};  // TCP connect, and the TLS handshake after it
  std::chrono::milliseconds read{30000};    // whole reply must arrive within this
};

// The key logon (PROTOCOL.md section 2): "EXCHANGE-LOGON 1 NAME KEY" before anything else.
struct Credentials {
  std::string principal;  // empty: no logon line
  std::string api_key;    // secret: never in a message, a log or a report
  bool present() const { return !principal.empty(); }
};

struct ConnectOptions {
  ConnectOptions() = default;
  // Plaintext and anonymous, with these timeouts.
  ConnectOptions(Timeouts t) : timeouts(t) {}  // NOLINT: implicit on purpose

  Timeouts timeouts;
  std::shared_ptr<TlsClient> tls;  // null: plaintext TCP
  Credentials credentials;
};

}  // namespace exch::net
