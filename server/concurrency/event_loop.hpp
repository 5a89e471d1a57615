#pragma once
// The asynchronous half shared by the event-loop models: a Boost.Asio io_context that accepts
// connections and frames their requests (each connection an AsyncConnection running a
// net::Session). What happens to a framed request (run inline, on a new thread, on a pool) is
// the DispatchFn, which EventLoopModel builds from the model's RunPolicy.
#include <atomic>
#include <memory>
#include <mutex>
#include <set>

#include <boost/asio.hpp>

#include "net/async_connection.hpp"
#include "net/listener.hpp"
#include "net/pending_slots.hpp"

namespace concurrency {

class EventLoop {
 public:
  EventLoop(net::Listener& listener, const net::ConnectionLimits& limits,
            net::AsyncConnection::DispatchFn dispatch);

  // Runs the loop on the calling thread until stop() and the last connection closes.
  void run();
  // Thread-safe: stops accepting and closes connections as soon as they are idle.
  void stop();
  boost::asio::io_context& io() { return io_; }
  std::size_t open_connections() const { return open_connections_; }
  std::size_t refused_connections() const { return refuser_.refused(); }
  const net::PendingSlots& slots() const { return *slots_; }

 private:
  void accept();
  // A connection just accepted: served in a slot (pending_slots.hpp), or refused busy.
  void admit(boost::asio::ip::tcp::socket socket);

  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer backoff_;  // delays the next accept after running out of descriptors
  net::ConnectionLimits limits_;
  net::AsyncConnection::DispatchFn dispatch_;
  std::mutex mutex_;
  std::set<std::weak_ptr<net::AsyncConnection>,
           std::owner_less<std::weak_ptr<net::AsyncConnection>>>
      connections_;
  std::atomic<std::size_t> open_connections_{0};
  std::shared_ptr<net::PendingSlots> slots_;
  net::Refuser refuser_;
};

// Model::stop() comes from the signal-handling thread at any moment: before run() has built
// its EventLoop, while it runs, or after it is gone. A model keeps one LoopStopper and run()
// holds an Attachment while its loop exists, so stop() reaches the loop exactly then, and a
// stop() that came first stops the new loop at once.
class LoopStopper {
 public:
  class Attachment {
   public:
    Attachment(LoopStopper& stopper, EventLoop& loop);
    ~Attachment();  // also on the way out of an exception: stop() must not see a dead loop
    Attachment(const Attachment&) = delete;
    Attachment& operator=(const Attachment&) = delete;

   private:
    LoopStopper& stopper_;
  };

  void stop();

 private:
  std::mutex mutex_;
  EventLoop* loop_ = nullptr;
  bool stopping_ = false;
};

}  // namespace concurrency
