#include "concurrency/event_loop.hpp"

namespace concurrency {

namespace asio = boost::asio;

EventLoop::EventLoop(net::Listener& listener, const net::ConnectionLimits& limits,
                     net::AsyncConnection::DispatchFn dispatch)
    : acceptor_(io_, asio::ip::tcp::v4(), listener.release()),
      limits_(limits),
      dispatch_(std::move(dispatch)) {}

void EventLoop::run() {
  accept();
  io_.run();
}

void EventLoop::accept() {
  acceptor_.async_accept([this](boost::system::error_code ec, asio::ip::tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (!ec) {
      ++open_connections_;
      auto conn = std::make_shared<net::AsyncConnection>(std::move(socket), limits_, dispatch_,
                                                         [this] { --open_connections_; });
      {
        std::lock_guard<std::mutex> lock(mutex_);
        // Forget connections that are gone, so the set stays as small as what is open.
        for (auto it = connections_.begin(); it != connections_.end();)
          it = it->expired() ? connections_.erase(it) : std::next(it);
        connections_.insert(conn);
      }
      conn->start();
    }
    accept();  // errors such as EMFILE affect one connection, not the listener
  });
}

void EventLoop::stop() {
  asio::post(io_, [this] {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& weak : connections_)
      if (auto conn = weak.lock()) conn->shutdown();
    connections_.clear();
  });
}

}  // namespace concurrency
