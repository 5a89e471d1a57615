// The two ways of talking to the exchange (framing.hpp): one request per connection, and a
// persistent session; both with the key logon first when credentials are given (logon.hpp),
// over plaintext or TLS as the ConnectOptions say.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "net/connect_options.hpp"
#include "net/connection.hpp"

namespace exch::net {

inline constexpr std::size_t kMaxReplyBytes = 256u << 20;

// Default mode: connect, send "N\n"+xml (behind the logon line), read the reply until the
// server closes. Throws NotSent (LogonRefused for a refused logon) or NoReply (both NetError)
// as the failure came before or after the request left.
std::string request_once(const Endpoint& endpoint, std::string_view xml,
                         const ConnectOptions& options);

// Connects (TLS handshake included) and, with credentials, logs on; then closes. Sends no
// request. Throws NotSent (LogonRefused).
void probe(const Endpoint& endpoint, const ConnectOptions& options);

// A persistent session: the logon and the hello are exchanged in open(); then request() any
// number of times. After any exception the session is unusable (closed).
class Session {
 public:
  // Throws NotSent (no connection, no answer, LogonRefused) or SessionUnsupported.
  static std::unique_ptr<Session> open(const Endpoint& endpoint, const ConnectOptions& options);
  // Throws NotSent or NoReply, as request_once() does.
  std::string request(std::string_view xml);
  const Endpoint& endpoint() const { return *endpoint_; }
  bool usable() const { return connection_.is_open(); }
  // Closed by the server while idle (checked before reuse, without blocking).
  bool stale() const { return !usable() || connection_.idle_input_pending(); }

 private:
  Session(const Endpoint& e, Connection c, const ConnectOptions& o)
      : endpoint_(&e), connection_(std::move(c)), timeouts_(o.timeouts) {}
  const Endpoint* endpoint_;
  Connection connection_;
  Timeouts timeouts_;
};

// Idle persistent sessions to one endpoint, shared by threads (LIFO reuse).
class SessionPool {
 public:
  SessionPool(const Endpoint& endpoint, ConnectOptions options)
      : endpoint_(endpoint), options_(std::move(options)) {}
  std::unique_ptr<Session> acquire();              // idle non-stale one, or a new one
  void release(std::unique_ptr<Session> session);  // back to the idle list if usable
  std::size_t opened() const;                      // sessions opened so far (hello said)
  std::size_t close_idle();                        // closes every idle session; how many

 private:
  const Endpoint& endpoint_;
  ConnectOptions options_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Session>> idle_;
  std::size_t opened_ = 0;
};

}  // namespace exch::net
