#pragma once
// Drives a Session over a Boost.Asio socket, plaintext or TLS (limits.tls: Asio's ssl::stream,
// the handshake first, under the read deadline): reads only when the session wants bytes, writes
// asynchronously, runs the session's deadline on a timer, and hands each framed request, with
// who sent it, to `dispatch`, whose reply may come back from any thread. Every socket outcome
// (EOF, reset, short or failed write, timeout) is an event for the session, never an exception;
// anything that still throws inside a handler closes this connection only and is logged with it.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio.hpp>
#include <boost/asio/ssl/stream.hpp>

#include "auth/caller.hpp"
#include "net/pending_slots.hpp"
#include "net/session.hpp"

namespace net {

class AsyncConnection : public std::enable_shared_from_this<AsyncConnection> {
 public:
  using ReplyFn = std::function<void(std::string xml)>;
  // Must eventually call the ReplyFn exactly once, from any thread.
  using DispatchFn = std::function<void(std::string payload, auth::Caller caller, ReplyFn reply)>;

  // `slot`: its place among the listener's connections (pending_slots.hpp): while pending,
  // every deadline ends by the slot's, and an eviction closes the connection at once.
  AsyncConnection(boost::asio::ip::tcp::socket socket, const ConnectionLimits& limits,
                  DispatchFn dispatch, std::function<void()> on_close,
                  PendingSlots::Slot slot = {});
  ~AsyncConnection();

  void start();
  // Closes the connection if it is idle; otherwise once the request in flight is answered.
  // Thread-safe.
  void shutdown();

 private:
  using TlsStream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;
  // The TCP socket under either stream.
  boost::asio::ip::tcp::socket& socket() { return tls_ ? tls_->next_layer() : *plain_; }
  // TLS: the handshake, then the session starts (with the certificate's name).
  void handshake();
  void begin(std::string certificate_name);
  // Carries out what the session asks for, then reads if it wants bytes.
  void pump();
  void read();
  void write(std::string bytes);
  void start_deadline();
  // limits.read_timeout from now, or the end of the pending phase if that comes first.
  std::chrono::steady_clock::time_point read_deadline() const;
  // Thread-safe: closes at once, whatever the connection is doing (its slot was taken).
  void evict();
  // TLS: sends close_notify (waiting a moment for the peer's) before the socket closes.
  void close_gracefully();
  void close();
  // Runs one event handler: whatever escapes it closes this connection, not the server.
  template <typename Fn>
  void guarded(const char* where, Fn&& fn);

  std::optional<boost::asio::ip::tcp::socket> plain_;  // exactly one of plain_ and tls_
  std::optional<TlsStream> tls_;
  bool tls_started_ = false;  // the handshake began: a TLS close is owed
  boost::asio::steady_timer timer_;
  ConnectionLimits limits_;
  DispatchFn dispatch_;
  std::function<void()> on_close_;
  Session session_;
  PendingSlots::Slot slot_;  // released when the socket closes
  const std::string peer_;   // for log lines
  char buf_[16384];
  std::string out_;  // the bytes of the write in flight
  bool reading_ = false;
  bool closed_ = false;
  bool broken_ = false;             // a socket error: no close_notify
  std::uint64_t deadline_gen_ = 0;  // a timer wait that was superseded must not fire
};

}  // namespace net
