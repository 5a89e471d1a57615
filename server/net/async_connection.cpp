#include "net/async_connection.hpp"

namespace net {

namespace asio = boost::asio;

AsyncConnection::AsyncConnection(asio::ip::tcp::socket socket, const ConnectionLimits& limits,
                                 DispatchFn dispatch, std::function<void()> on_close)
    : socket_(std::move(socket)),
      timer_(socket_.get_executor()),
      limits_(limits),
      dispatch_(std::move(dispatch)),
      on_close_(std::move(on_close)),
      reader_(limits.max_request_bytes) {}

AsyncConnection::~AsyncConnection() {
  if (on_close_) on_close_();
}

void AsyncConnection::start() {
  boost::system::error_code ignored;
  socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
  arm_timer();
  read_more();
}

void AsyncConnection::arm_timer() {
  // Armed when the wait for a request starts and when a write starts, never on each read: a
  // client sending one byte at a time still has to finish within the timeout.
  timer_.expires_after(limits_.read_timeout);
  timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || self->busy_ || self->closed_) return;
    // Re-armed after this wait had already completed: not this deadline.
    if (self->timer_.expiry() > std::chrono::steady_clock::now()) return;
    // A peer that does not read its reply, or a stalled client, does not hold the connection.
    if (self->writing_) return self->close();
    if (self->reader_.mid_request())
      self->send(frame_reply(framing_error_reply(
                                 "Bad framing: timed out waiting for the rest of the request"),
                             self->persistent_),
                 true);
    else
      self->close();
  });
}

void AsyncConnection::read_more() {
  if (shutting_down_) return close();
  socket_.async_read_some(
      asio::buffer(buf_), [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
        // A final reply (the timeout error) is going out while this read was pending.
        if (self->closed_ || self->final_write_) return;
        if (ec) {
          if (ec != asio::error::operation_aborted && self->reader_.mid_request())
            return self->send(
                frame_reply(framing_error_reply("Bad framing: connection closed before the "
                                                "whole request arrived"),
                            self->persistent_),
                true);
          return self->close();
        }
        self->reader_.feed(self->buf_, n);
        self->process_buffer();
      });
}

void AsyncConnection::process_buffer() {
  std::string out;
  for (;;) {
    switch (reader_.next(out)) {
      case FrameReader::Event::NeedMore:
        return read_more();
      case FrameReader::Event::SessionHello:
        persistent_ = true;
        // The acknowledgement goes out before any reply, so send it and keep parsing.
        asio::write(socket_, asio::buffer(kSessionAccept.data(), kSessionAccept.size()));
        continue;
      case FrameReader::Event::Error:
        return send(frame_reply(framing_error_reply(out), persistent_), true);
      case FrameReader::Event::Request: {
        busy_ = true;
        timer_.cancel();
        auto self = shared_from_this();
        // Keeps the event loop running while the reply is being produced elsewhere.
        auto work = std::make_shared<asio::executor_work_guard<asio::any_io_executor>>(
            socket_.get_executor());
        dispatch_(std::move(out), [self, work](std::string xml) {
          // Back onto the connection's event loop, whichever thread produced the reply.
          asio::post(self->socket_.get_executor(), [self, xml = std::move(xml)]() mutable {
            self->busy_ = false;
            self->send(frame_reply(std::move(xml), self->persistent_), !self->persistent_);
          });
        });
        return;
      }
    }
  }
}

void AsyncConnection::send(std::string bytes, bool then_close) {
  if (closed_) return;
  out_ = std::move(bytes);
  writing_ = true;
  final_write_ = then_close;
  arm_timer();
  asio::async_write(
      socket_, asio::buffer(out_),
      [self = shared_from_this(), then_close](boost::system::error_code ec, std::size_t) {
        self->writing_ = false;
        if (ec || then_close || self->closed_) return self->close();
        // The next request of the session gets its own deadline; a pipelined one
        // may be buffered already.
        self->arm_timer();
        self->process_buffer();
      });
}

void AsyncConnection::shutdown() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    self->shutting_down_ = true;
    // A reply being written finishes first; read_more() then closes.
    if (!self->busy_ && !self->writing_) self->close();
  });
}

void AsyncConnection::close() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ignored;
  timer_.cancel();
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

}  // namespace net
