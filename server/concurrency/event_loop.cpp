#include "concurrency/event_loop.hpp"

#include <string>

#include "util/log.hpp"

namespace concurrency {

namespace asio = boost::asio;

EventLoop::EventLoop(net::Listener& listener, const net::ConnectionLimits& limits,
                     net::AsyncConnection::DispatchFn dispatch)
    : acceptor_(io_, asio::ip::tcp::v4(), listener.release()),
      backoff_(io_),
      limits_(limits),
      dispatch_(std::move(dispatch)),
      slots_(std::make_shared<net::PendingSlots>(
          limits.max_connections, limits.max_pending_connections, limits.logon_timeout)),
      refuser_(limits.tls != nullptr) {}

void EventLoop::run() {
  accept();
  // Connections catch what their own handlers throw (AsyncConnection::guarded); this is the
  // backstop for anything else, so that no handler can end the process. Asio lets run() be
  // called again after an exception has left it.
  for (;;) {
    try {
      io_.run();
      return;
    } catch (const std::exception& e) {
      EXCHANGE_LOG(error) << "event loop: a handler failed (" << e.what() << "); serving on";
    } catch (...) {
      EXCHANGE_LOG(error) << "event loop: a handler failed (unknown exception); serving on";
    }
  }
}

void EventLoop::accept() {
  acceptor_.async_accept([this](boost::system::error_code ec, asio::ip::tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space ||
        ec == asio::error::no_memory) {
      // The connection stays in the backlog, so accepting again at once would fail again at
      // once and spin this thread; wait for descriptors to be freed instead.
      EXCHANGE_LOG(warn) << "accept failed (" << ec.message() << "), retrying in 100 ms";
      backoff_.expires_after(std::chrono::milliseconds(100));
      backoff_.async_wait([this](boost::system::error_code wait_ec) {
        if (!wait_ec) accept();
      });
      return;
    }
    if (!ec) admit(std::move(socket));
    accept();  // other errors affect one connection, not the listener
  });
}

void EventLoop::admit(asio::ip::tcp::socket socket) {
  net::PendingSlots::Slot slot = slots_->admit();
  if (!slot) {
    // --max-connections are open already, every one authenticated: "Server busy", and let go.
    boost::system::error_code release_ec;
    int fd = socket.release(release_ec);
    if (!release_ec) refuser_.refuse_busy(fd, limits_.max_connections);
    return;
  }
  ++open_connections_;
  auto conn = std::make_shared<net::AsyncConnection>(
      std::move(socket), limits_, dispatch_, [this] { --open_connections_; }, std::move(slot));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Forget connections that are gone, so the set stays as small as what is open.
    for (auto it = connections_.begin(); it != connections_.end();)
      it = it->expired() ? connections_.erase(it) : std::next(it);
    connections_.insert(conn);
  }
  conn->start();
}

void EventLoop::stop() {
  asio::post(io_, [this] {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    backoff_.cancel();
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& weak : connections_)
      if (auto conn = weak.lock()) conn->shutdown();
    connections_.clear();
  });
}

LoopStopper::Attachment::Attachment(LoopStopper& stopper, EventLoop& loop) : stopper_(stopper) {
  std::lock_guard<std::mutex> lock(stopper_.mutex_);
  stopper_.loop_ = &loop;
  if (stopper_.stopping_) loop.stop();
}

LoopStopper::Attachment::~Attachment() {
  std::lock_guard<std::mutex> lock(stopper_.mutex_);
  stopper_.loop_ = nullptr;
}

void LoopStopper::stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  stopping_ = true;
  if (loop_) loop_->stop();
}

}  // namespace concurrency
