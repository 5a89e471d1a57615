// Fixed pool, half-sync/half-async: the event loop reads and frames requests on one thread and
// queues them; --threads pre-started workers take them off the queue and run the handler.
// Workers never wait for the database: the reply goes back to the event loop when its batch
// commits, so a worker is busy only while a request is parsed, applied and rendered.
#include <condition_variable>
#include <deque>
#include <mutex>

#include <boost/thread/thread.hpp>

#include "concurrency/event_loop.hpp"
#include "concurrency/model.hpp"
#include "concurrency/run_request.hpp"

namespace concurrency {
namespace {

class Pool : public Model {
 public:
  explicit Pool(const ModelOptions& options) : options_(options) {}

  void run(net::Listener& listener, app::RequestHandler& handler) override {
    app::Metrics& metrics = *options_.metrics;
    EventLoop loop(listener, options_.limits,
                   [this, &metrics](std::string payload, net::AsyncConnection::ReplyFn reply) {
                     metrics.arrival();
                     {
                       std::lock_guard<std::mutex> lock(mutex_);
                       queue_.push_back({std::move(payload), std::move(reply)});
                     }
                     ready_.notify_one();
                   });
    LoopStopper::Attachment attached(stopper_, loop);
    const unsigned threads = std::max(1u, options_.threads);
    boost::thread_group workers;
    for (unsigned i = 0; i < threads; ++i)
      workers.create_thread([this, &handler] { work(handler); });
    metrics.set_gauges([this, &loop, threads] {
      app::Metrics::Gauges g;
      g.threads = threads;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        g.busy = static_cast<long>(busy_);
        g.queued = static_cast<long>(queue_.size());
      }
      g.connections = static_cast<long>(loop.open_connections());
      return g;
    });
    loop.run();  // returns when stopped and every connection has closed
    metrics.set_gauges(nullptr);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      workers_done_ = true;
    }
    ready_.notify_all();
    workers.join_all();
  }

  void stop() override { stopper_.stop(); }

 private:
  struct Job {
    std::string payload;
    net::AsyncConnection::ReplyFn reply;
  };

  void work(app::RequestHandler& handler) {
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [this] { return workers_done_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
        ++busy_;
      }
      run_request(handler, options_, job.payload, std::move(job.reply));
      std::lock_guard<std::mutex> lock(mutex_);
      --busy_;
    }
  }

  ModelOptions options_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Job> queue_;
  std::size_t busy_ = 0;
  bool workers_done_ = false;
  LoopStopper stopper_;
};

}  // namespace

std::unique_ptr<Model> make_pool(const ModelOptions& options) {
  return std::make_unique<Pool>(options);
}

}  // namespace concurrency
