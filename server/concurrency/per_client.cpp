// Thread per client: the accepting thread spawns one thread per connection, which reads,
// handles and answers every request on it with blocking calls, then exits.
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <set>

#include <boost/thread/thread.hpp>

#include "concurrency/model.hpp"
#include "concurrency/run_request.hpp"
#include "concurrency/thread_set.hpp"
#include "net/blocking_connection.hpp"
#include "serving/reply_errors.hpp"
#include "util/log.hpp"

namespace concurrency {
namespace {

class PerClient : public Model {
 public:
  explicit PerClient(const ModelOptions& options)
      : options_(options),
        slots_(std::make_shared<net::PendingSlots>(options.limits.max_connections,
                                                   options.limits.max_pending_connections,
                                                   options.limits.logon_timeout)),
        refuser_(options.limits.tls != nullptr) {}

  void run(net::Listener& listener, serving::Handler& handler,
           serving::MetricsSink& metrics) override {
    const RequestRunner runner(options_, handler, metrics);
    metrics.set_gauges([this] {
      serving::Gauges g;
      std::lock_guard<std::mutex> lock(mutex_);
      g.threads = g.connections = static_cast<long>(open_.size());
      g.busy = static_cast<long>(busy_);
      g.refused = static_cast<long>(refuser_.refused());
      budget_gauges(options_.limits, g);
      slot_gauges(*slots_, g);
      return g;
    });
    while (!stopping_) {
      int fd = listener.accept_for(std::chrono::milliseconds(100));
      if (fd < 0) continue;
      // A slot, maybe the oldest pending connection's (pending_slots.hpp); none when
      // --max-connections are open and every one is authenticated.
      auto slot = std::make_shared<net::PendingSlots::Slot>(slots_->admit());
      if (!*slot) {
        refuser_.refuse_busy(fd, options_.limits.max_connections);  // without a thread
        continue;
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        open_.insert(fd);
      }
      try {
        threads_.spawn([this, fd, &runner, slot] { serve(fd, runner, std::move(*slot)); });
      } catch (const boost::thread_resource_error& e) {
        EXCHANGE_LOG(warn) << "cannot start a thread for a connection: " << e.what();
        slot->release();
        {
          std::lock_guard<std::mutex> lock(mutex_);
          open_.erase(fd);
        }
        // The thread limit (ulimit -u, pids.max) came before --max-connections: say so.
        refuser_.refuse(fd, net::framing_error_reply(
                                serving::error_text(serving::ReplyError::NoThreadForConnection)));
      }
    }
    // Wake threads waiting for a next request; one being handled still gets its reply out.
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (int fd : open_) ::shutdown(fd, SHUT_RD);
    }
    threads_.join_all();
    metrics.set_gauges(nullptr);
  }

  void stop() override { stopping_ = true; }

 private:
  void serve(int fd, const RequestRunner& runner, net::PendingSlots::Slot slot) {
    net::serve_blocking(
        fd, options_.limits,
        [this, &runner](const std::string& payload, const auth::Caller& caller) {
          runner.metrics().arrival();
          {
            std::lock_guard<std::mutex> lock(mutex_);
            ++busy_;
          }
          std::string reply = runner.run_blocking(payload, caller);
          std::lock_guard<std::mutex> lock(mutex_);
          --busy_;
          return reply;
        },
        std::move(slot));
    // Leaves the set before the descriptor is closed, whose number may then be reused.
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_.erase(fd);
    }
    ::close(fd);
  }

  ModelOptions options_;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::set<int> open_;
  std::size_t busy_ = 0;  // connection threads inside the handler (or waiting for its commit)
  std::shared_ptr<net::PendingSlots> slots_;
  net::Refuser refuser_;
  ThreadSet threads_;
};

}  // namespace

std::unique_ptr<Model> make_per_client(const ModelOptions& options) {
  return std::make_unique<PerClient>(options);
}

}  // namespace concurrency
