// Thread per client: the accepting thread spawns one thread per connection, which reads,
// handles and answers every request on it with blocking calls, then exits.
#include <sys/socket.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>

#include <boost/thread/thread.hpp>

#include "concurrency/model.hpp"
#include "concurrency/run_request.hpp"
#include "net/blocking_connection.hpp"

namespace concurrency {
namespace {

class PerClient : public Model {
 public:
  explicit PerClient(const ModelOptions& options) : options_(options) {}

  void run(net::Listener& listener, app::RequestHandler& handler) override {
    app::Metrics& metrics = *options_.metrics;
    metrics.set_gauges([this] {
      app::Metrics::Gauges g;
      std::lock_guard<std::mutex> lock(mutex_);
      g.threads = g.connections = static_cast<long>(open_.size());
      g.busy = static_cast<long>(busy_);
      return g;
    });
    while (!stopping_) {
      int fd = listener.accept_for(std::chrono::milliseconds(100));
      if (fd < 0) continue;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        open_.insert(fd);
      }
      boost::thread([this, fd, &handler, &metrics] {
        net::BlockingConnection conn(fd, options_.limits);
        net::serve_blocking(conn, [this, &handler, &metrics](const std::string& payload) {
          metrics.arrival();
          {
            std::lock_guard<std::mutex> lock(mutex_);
            ++busy_;
          }
          std::string reply = run_request_blocking(handler, options_, payload);
          std::lock_guard<std::mutex> lock(mutex_);
          --busy_;
          return reply;
        });
        // Leaves the set before `conn` closes the descriptor, which may then be reused.
        std::lock_guard<std::mutex> lock(mutex_);
        open_.erase(fd);
        if (open_.empty()) all_closed_.notify_all();
      }).detach();
    }
    // Wake threads waiting for a next request; one being handled still gets its reply out.
    std::unique_lock<std::mutex> lock(mutex_);
    for (int fd : open_) ::shutdown(fd, SHUT_RD);
    all_closed_.wait(lock, [this] { return open_.empty(); });
    lock.unlock();
    metrics.set_gauges(nullptr);
  }

  void stop() override { stopping_ = true; }

 private:
  ModelOptions options_;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::condition_variable all_closed_;
  std::set<int> open_;
  std::size_t busy_ = 0;  // connection threads inside the handler (or waiting for its commit)
};

}  // namespace

std::unique_ptr<Model> make_per_client(const ModelOptions& options) {
  return std::make_unique<PerClient>(options);
}

}  // namespace concurrency
