// One client connection with deadlines: a non-blocking POSIX socket waited on with poll, in
// plaintext or TLS (tls.hpp), read as bytes, lines or until EOF. What is said over it is
// session.hpp's business.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "net/connect_options.hpp"
#include "net/deadline.hpp"
#include "net/endpoint.hpp"
#include "net/errors.hpp"

namespace exch::net {

class TlsStream;

class Connection {
 public:
  Connection();
  ~Connection();
  Connection(Connection&& other) noexcept;
  Connection& operator=(Connection&& other) noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // TCP connect, then the TLS handshake when options.tls is set, both within
  // options.timeouts.connect. Throws NotSent.
  static Connection open(const Endpoint& endpoint, const ConnectOptions& options);
  // Plaintext.
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
  std::size_t receive(char* chunk, std::size_t size, Clock::time_point deadline);

  int fd_ = -1;
  std::unique_ptr<TlsStream> tls_;
  std::string buffer_;
  std::string peer_;
};

}  // namespace exch::net
