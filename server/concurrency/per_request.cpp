// Thread per request: the event loop reads and frames requests (also several on a persistent
// connection, one at a time each); every request gets a new thread that runs the handler and
// exits. The thread's creation cost is paid on every request, and under load the number of
// threads is the number of requests being handled, with no bound.
#include <condition_variable>
#include <mutex>

#include <boost/thread/thread.hpp>

#include "app/log.hpp"
#include "concurrency/event_loop.hpp"
#include "concurrency/model.hpp"
#include "concurrency/run_request.hpp"

namespace concurrency {
namespace {

class PerRequest : public Model {
 public:
  explicit PerRequest(const ModelOptions& options) : options_(options) {}

  void run(net::Listener& listener, app::RequestHandler& handler) override {
    app::Metrics& metrics = *options_.metrics;
    EventLoop loop(listener, options_.limits,
                   [this, &handler, &metrics](std::string payload,
                                              net::AsyncConnection::ReplyFn reply) {
                     metrics.arrival();
                     spawn(handler, std::move(payload), std::move(reply));
                   });
    {
      std::lock_guard<std::mutex> lock(mutex_);
      loop_ = &loop;
      if (stopping_) loop.stop();
    }
    metrics.set_gauges([this, &loop] {
      app::Metrics::Gauges g;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        g.threads = g.busy = static_cast<long>(live_);
      }
      g.connections = static_cast<long>(loop.open_connections());
      return g;
    });
    loop.run();  // returns when stopped, every connection closed and every reply written
    metrics.set_gauges(nullptr);
    std::unique_lock<std::mutex> lock(mutex_);
    loop_ = nullptr;
    // The last threads may still be leaving after their reply went out.
    all_done_.wait(lock, [this] { return live_ == 0; });
  }

  void stop() override {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    if (loop_) loop_->stop();
  }

 private:
  void spawn(app::RequestHandler& handler, std::string payload,
             net::AsyncConnection::ReplyFn reply) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++live_;
    }
    try {
      boost::thread([this, &handler, payload = std::move(payload), reply]() mutable {
        run_request(handler, options_, payload, std::move(reply));
        std::lock_guard<std::mutex> lock(mutex_);
        if (--live_ == 0) all_done_.notify_all();
      }).detach();
    } catch (const boost::thread_resource_error& e) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (--live_ == 0) all_done_.notify_all();
      }
      EXCHANGE_LOG(warn) << "cannot start a thread for a request: " << e.what();
      reply(net::framing_error_reply("Server busy: no thread for the request; retry later"));
    }
  }

  ModelOptions options_;
  std::mutex mutex_;
  std::condition_variable all_done_;
  std::size_t live_ = 0;
  EventLoop* loop_ = nullptr;
  bool stopping_ = false;
};

}  // namespace

std::unique_ptr<Model> make_per_request(const ModelOptions& options) {
  return std::make_unique<PerRequest>(options);
}

}  // namespace concurrency
