#include "net/async_connection.hpp"

#include <cstring>

#include "net/blocking_stream.hpp"
#include "net/peer.hpp"
#include "net/tls_context.hpp"
#include "util/log.hpp"

namespace net {

namespace asio = boost::asio;

namespace {

// How long a TLS close waits for the peer's close_notify before the socket closes anyway.
constexpr std::chrono::milliseconds kTlsCloseWait{1000};

}  // namespace

AsyncConnection::AsyncConnection(asio::ip::tcp::socket socket, const ConnectionLimits& limits,
                                 DispatchFn dispatch, std::function<void()> on_close,
                                 PendingSlots::Slot slot)
    : timer_(socket.get_executor()),
      limits_(limits),
      dispatch_(std::move(dispatch)),
      on_close_(std::move(on_close)),
      session_(limits, peer_of(socket.native_handle(), limits.tls != nullptr)),
      slot_(std::move(slot)),
      peer_(session_.peer().address) {
  if (limits.tls)
    tls_.emplace(std::move(socket), limits.tls->asio());
  else
    plain_.emplace(std::move(socket));
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
  slot_.on_close([weak = weak_from_this()] {
    if (auto self = weak.lock()) self->evict();
  });
  guarded("start", [&] {
    boost::system::error_code ignored;
    socket().set_option(asio::ip::tcp::no_delay(true), ignored);
    if (tls_) return handshake();
    begin({});
  });
}

void AsyncConnection::handshake() {
  // Under the read deadline, like a request, and within the pending phase: a peer that opens a
  // handshake and stalls is cut.
  const std::uint64_t gen = ++deadline_gen_;
  timer_.expires_at(read_deadline());
  timer_.async_wait([self = shared_from_this(), gen](boost::system::error_code ec) {
    if (ec || self->closed_ || gen != self->deadline_gen_) return;
    self->broken_ = true;
    self->close();
  });
  tls_started_ = true;
  tls_->async_handshake(
      asio::ssl::stream_base::server, [self = shared_from_this()](boost::system::error_code ec) {
        if (self->closed_) return;
        self->guarded("handshake", [&] {
          if (ec) {
            // Not TLS, a certificate that does not verify, a reset.
            EXCHANGE_LOG(debug) << "connection " << self->peer_ << ": TLS handshake failed ("
                                << ec.message() << ")";
            self->broken_ = true;
            return self->close();
          }
          ++self->deadline_gen_;
          self->timer_.cancel();
          self->begin(certificate_name(self->tls_->native_handle()));
        });
      });
}

void AsyncConnection::begin(std::string certificate_name) {
  session_.started(std::move(certificate_name));
  pump();
}

void AsyncConnection::shutdown() {
  asio::post(timer_.get_executor(), [self = shared_from_this()] {
    self->guarded("shutdown", [&] {
      self->session_.shutdown();
      self->pump();
    });
  });
}

void AsyncConnection::evict() {
  asio::post(timer_.get_executor(), [self = shared_from_this()] {
    EXCHANGE_LOG(debug) << "connection " << self->peer_
                        << ": not authenticated yet, closed for a newcomer";
    self->broken_ = true;
    self->close();
  });
}

void AsyncConnection::pump() {
  // Authenticated now: the slot leaves the pending list, unless it was taken first.
  if (session_.authenticated() && !slot_.authenticated()) {
    broken_ = true;
    return close();
  }
  Session::Action action;
  while (session_.next(action)) {
    switch (action.kind) {
      case Session::Action::Kind::Send:
        write(std::move(action.data));
        break;
      case Session::Action::Kind::Dispatch: {
        // Keeps the event loop running while the reply is being produced elsewhere.
        auto work = std::make_shared<asio::executor_work_guard<asio::any_io_executor>>(
            timer_.get_executor());
        dispatch_(std::move(action.data),
                  auth::Caller{session_.principal(), peer_, session_.generation()},
                  [self = shared_from_this(), work](std::string xml) {
                    // Back onto the connection's event loop, whichever thread made the reply.
                    asio::post(self->timer_.get_executor(), [self, xml = std::move(xml)]() mutable {
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
        close_gracefully();
        return;
    }
  }
  if (!closed_ && !reading_ && session_.wants_read()) read();
}

void AsyncConnection::read() {
  reading_ = true;
  auto on_read = [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
    self->reading_ = false;
    if (self->closed_) return;
    self->guarded("read", [&] {
      if (!ec) {
        self->session_.received(self->buf_, n);
        if (self->session_.took_logon()) std::memset(self->buf_, 0, sizeof self->buf_);  // a key
      } else if (ec == asio::error::eof || ec == asio::ssl::error::stream_truncated) {
        self->session_.peer_closed();  // TLS: close_notify, or a TCP close without one
      } else {
        self->broken_ = true;
        self->session_.failed();  // reset, timeout, anything: nothing more to say
      }
      self->pump();
    });
  };
  if (tls_)
    tls_->async_read_some(asio::buffer(buf_), std::move(on_read));
  else
    plain_->async_read_some(asio::buffer(buf_), std::move(on_read));
}

void AsyncConnection::write(std::string bytes) {
  out_ = std::move(bytes);
  auto on_written = [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
    // Not kept for the next write: a large reply would stay allocated, uncounted, for the
    // connection's life.
    std::string().swap(self->out_);
    if (self->closed_) return;
    self->guarded("write", [&] {
      if (ec) {
        self->broken_ = true;
        self->session_.failed();  // EPIPE, ECONNRESET: the peer is gone
      } else {
        self->session_.sent();
      }
      self->pump();
    });
  };
  if (tls_)
    asio::async_write(*tls_, asio::buffer(out_), std::move(on_written));
  else
    asio::async_write(*plain_, asio::buffer(out_), std::move(on_written));
}

void AsyncConnection::start_deadline() {
  std::uint64_t gen = ++deadline_gen_;
  timer_.expires_at(read_deadline());
  timer_.async_wait([self = shared_from_this(), gen](boost::system::error_code ec) {
    if (ec || self->closed_ || gen != self->deadline_gen_) return;
    self->guarded("deadline", [&] {
      self->session_.timed_out();
      self->pump();
    });
  });
}

std::chrono::steady_clock::time_point AsyncConnection::read_deadline() const {
  return slot_.deadline(std::chrono::steady_clock::now() + limits_.read_timeout);
}

void AsyncConnection::close_gracefully() {
  if (!tls_ || broken_ || closed_ || !tls_started_ || reading_) return close();
  // The session is done with the connection: its bytes are back in the budget already.
  const std::uint64_t gen = ++deadline_gen_;
  timer_.expires_after(std::min(limits_.read_timeout, kTlsCloseWait));
  timer_.async_wait([self = shared_from_this(), gen](boost::system::error_code ec) {
    if (!ec && gen == self->deadline_gen_) self->close();
  });
  tls_->async_shutdown([self = shared_from_this()](boost::system::error_code) {
    ++self->deadline_gen_;
    self->close();
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
  if (!broken_) discard_pending_input(socket().native_handle());
  socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket().close(ignored);
  slot_.release();
}

}  // namespace net
