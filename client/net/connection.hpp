// Blocking TCP client connections with deadlines (POSIX sockets + poll), and
// the two ways of talking to the exchange: one request per connection, and a
// persistent session (see framing.hpp).
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace exch::net {

using Clock = std::chrono::steady_clock;

struct Timeouts {
  std::chrono::milliseconds connect{5000};
  std::chrono::milliseconds read{30000};  // whole reply must arrive within this
};

// Any failure to talk to a server: refused, timeout, reset, early EOF, bad framing.
class NetError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The request never left whole (no connection, no session, or a failed write): no server can
// have applied it, so it may be sent to another.
class NotSent : public NetError {
 public:
  using NetError::NetError;
};

// The request was sent whole and no whole reply came back (reset, early close, timeout): it
// may or may not have been applied. Never resend it blindly; query first.
class NoReply : public NetError {
 public:
  using NetError::NetError;
};

// The server answered the session hello with something else (an old server).
class SessionUnsupported : public NetError {
 public:
  using NetError::NetError;
};

// host:port resolved once (getaddrinfo), so benchmarks do not resolve per request.
class Endpoint {
 public:
  static Endpoint resolve(const std::string& host, std::uint16_t port);
  const std::string& name() const { return name_; }
  std::string host() const { return host_; }
  std::uint16_t port() const { return port_; }

  struct Address {
    sockaddr_storage storage{};
    socklen_t length = 0;
    int family = 0;
  };
  const std::vector<Address>& addresses() const { return addresses_; }

 private:
  std::string host_;
  std::uint16_t port_ = 0;
  std::string name_;
  std::vector<Address> addresses_;
};

// Splits "host:port" / "[v6]:port" / "host".
void split_host_port(const std::string& text, std::uint16_t default_port, std::string& host,
                     std::uint16_t& port);

class Connection {
 public:
  Connection() = default;
  ~Connection();
  Connection(Connection&& other) noexcept;
  Connection& operator=(Connection&& other) noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  static Connection open(const Endpoint& endpoint, std::chrono::milliseconds timeout);

  bool is_open() const { return fd_ >= 0; }
  void close();

  void write_all(std::string_view bytes, Clock::time_point deadline);
  // Reads until the peer closes. Throws if more than max_bytes arrive.
  std::string read_until_eof(Clock::time_point deadline, std::size_t max_bytes);
  // Reads one line; returns it without '\n' (and without a trailing '\r').
  // eof_before_newline is set (and the partial text returned) if the peer
  // closes first; throws if the line is longer than max_bytes.
  std::string read_line(Clock::time_point deadline, std::size_t max_bytes,
                        bool& eof_before_newline);
  std::string read_exact(std::size_t n, Clock::time_point deadline);
  // Whatever arrives until EOF, `limit` bytes or the deadline (never throws).
  std::string read_some_quietly(Clock::time_point deadline, std::size_t limit);

  const std::string& peer() const { return peer_; }
  // True if bytes or EOF are waiting although nothing was asked: on an idle
  // session that means the server closed it (e.g. its idle timeout).
  bool idle_input_pending() const;

 private:
  // Appends received bytes to buffer_; returns false on EOF.
  bool fill(Clock::time_point deadline);

  int fd_ = -1;
  std::string buffer_;
  std::string peer_;
};

inline constexpr std::size_t kMaxReplyBytes = 256u << 20;

// Default mode: connect, send "N\n"+xml, read the reply until the server closes. Throws
// NotSent or NoReply (both NetError) as the failure came before or after the request left.
std::string request_once(const Endpoint& endpoint, std::string_view xml, const Timeouts& t);

// A persistent session: the hello is exchanged in open(); then request() any
// number of times. After any exception the session is unusable (closed).
class Session {
 public:
  // Throws NotSent (no connection or no answer to the hello) or SessionUnsupported.
  static std::unique_ptr<Session> open(const Endpoint& endpoint, const Timeouts& t);
  // Throws NotSent or NoReply, as request_once() does.
  std::string request(std::string_view xml);
  const Endpoint& endpoint() const { return *endpoint_; }
  bool usable() const { return connection_.is_open(); }
  // Closed by the server while idle (checked before reuse, without blocking).
  bool stale() const { return !usable() || connection_.idle_input_pending(); }

 private:
  Session(const Endpoint& e, Connection c, Timeouts t)
      : endpoint_(&e), connection_(std::move(c)), timeouts_(t) {}
  const Endpoint* endpoint_;
  Connection connection_;
  Timeouts timeouts_;
};

// Idle persistent sessions to one endpoint, shared by threads (LIFO reuse).
class SessionPool {
 public:
  SessionPool(const Endpoint& endpoint, Timeouts t) : endpoint_(endpoint), timeouts_(t) {}
  std::unique_ptr<Session> acquire();              // idle non-stale one, or a new one
  void release(std::unique_ptr<Session> session);  // back to the idle list if usable
  std::size_t opened() const;                      // sessions opened so far (hello said)
  std::size_t close_idle();                        // closes every idle session; how many

 private:
  const Endpoint& endpoint_;
  Timeouts timeouts_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Session>> idle_;
  std::size_t opened_ = 0;
};

}  // namespace exch::net
