#include "net/async_connection.hpp"

#include "util/log.hpp"

namespace net {

namespace asio = boost::asio;

AsyncConnection::AsyncConnection(asio::ip::tcp::socket socket, const ConnectionLimits& limits,
                                 DispatchFn dispatch, std::function<void()> on_close)
    : socket_(std::move(socket)),
      timer_(socket_.get_executor()),
      limits_(limits),
      dispatch_(std::move(dispatch)),
      on_close_(std::move(on_close)),
      session_(limits) {
  boost::system::error_code ec;
  auto remote = socket_.remote_endpoint(ec);
  peer_ = ec ? std::string("(peer gone)")
             : remote.address().to_string() + ":" + std::to_string(remote.port());
}

AsyncConnection::~AsyncConnection() {
  if (on_close_) on_close_();
}

template <typename Fn>
void AsyncConnection::guarded(const char* where, Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    EXCHANGE_LOG(error) << "connection " << peer_ << ": " << where << " failed (" << e.what()
                        << "); closing it";
    close();
  } catch (...) {
    EXCHANGE_LOG(error) << "connection " << peer_ << ": " << where
                        << " failed (unknown exception); closing it";
    close();
  }
}

void AsyncConnection::start() {
  guarded("start", [&] {
    boost::system::error_code ignored;
    socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
    session_.started();
    pump();
  });
}

void AsyncConnection::shutdown() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    self->guarded("shutdown", [&] {
      self->session_.shutdown();
      self->pump();
    });
  });
}

void AsyncConnection::pump() {
  Session::Action action;
  while (session_.next(action)) {
    switch (action.kind) {
      case Session::Action::Kind::Send:
        write(std::move(action.data));
        break;
      case Session::Action::Kind::Dispatch: {
        // Keeps the event loop running while the reply is being produced elsewhere.
        auto work = std::make_shared<asio::executor_work_guard<asio::any_io_executor>>(
            socket_.get_executor());
        dispatch_(std::move(action.data), [self = shared_from_this(), work](std::string xml) {
          // Back onto the connection's event loop, whichever thread produced the reply.
          asio::post(self->socket_.get_executor(), [self, xml = std::move(xml)]() mutable {
            self->guarded("reply", [&] {
              self->session_.replied(std::move(xml));
              self->pump();
            });
          });
        });
        break;
      }
      case Session::Action::Kind::StartDeadline:
        start_deadline();
        break;
      case Session::Action::Kind::StopDeadline:
        ++deadline_gen_;
        timer_.cancel();
        break;
      case Session::Action::Kind::Close:
        close();
        return;
    }
  }
  if (!closed_ && !reading_ && session_.wants_read()) read();
}

void AsyncConnection::read() {
  reading_ = true;
  socket_.async_read_some(
      asio::buffer(buf_), [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
        self->reading_ = false;
        if (self->closed_) return;
        self->guarded("read", [&] {
          if (!ec)
            self->session_.received(self->buf_, n);
          else if (ec == asio::error::eof)
            self->session_.peer_closed();
          else
            self->session_.failed();  // reset, timeout, anything: nothing more to say
          self->pump();
        });
      });
}

void AsyncConnection::write(std::string bytes) {
  out_ = std::move(bytes);
  asio::async_write(socket_, asio::buffer(out_),
                    [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                      // Not kept for the next write: a large reply would stay allocated,
                      // uncounted, for the connection's life.
                      std::string().swap(self->out_);
                      if (self->closed_) return;
                      self->guarded("write", [&] {
                        if (ec)
                          self->session_.failed();  // EPIPE, ECONNRESET: the peer is gone
                        else
                          self->session_.sent();
                        self->pump();
                      });
                    });
}

void AsyncConnection::start_deadline() {
  std::uint64_t gen = ++deadline_gen_;
  timer_.expires_after(limits_.read_timeout);
  timer_.async_wait([self = shared_from_this(), gen](boost::system::error_code ec) {
    if (ec || self->closed_ || gen != self->deadline_gen_) return;
    self->guarded("deadline", [&] {
      self->session_.timed_out();
      self->pump();
    });
  });
}

void AsyncConnection::close() {
  if (closed_) return;
  closed_ = true;
  // After an exception the session may not know yet: it gives its bytes back to the budget
  // now, not when the last handler holding this connection lets go (a no-op when it closed).
  session_.failed();
  boost::system::error_code ignored;
  timer_.cancel();
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

}  // namespace net
