// Reactor: one thread multiplexes every connection with Boost.Asio and runs each request's
// handler inline, on that same thread: the single-threaded baseline. Nothing else runs while a
// request is handled (simulated I/O included), but the group-commit wait is not on this
// thread: the reply is written when its batch commits, and meanwhile the loop serves others.
#include <atomic>

#include "concurrency/event_loop.hpp"
#include "concurrency/model.hpp"
#include "concurrency/run_request.hpp"

namespace concurrency {
namespace {

class Reactor : public Model {
 public:
  explicit Reactor(const ModelOptions& options) : options_(options) {}

  void run(net::Listener& listener, app::RequestHandler& handler) override {
    app::Metrics& metrics = *options_.metrics;
    EventLoop loop(
        listener, options_.limits,
        [this, &handler, &metrics](std::string payload, net::AsyncConnection::ReplyFn reply) {
          metrics.arrival();
          in_handler_.store(1, std::memory_order_relaxed);
          run_request(handler, options_, payload, std::move(reply));
          in_handler_.store(0, std::memory_order_relaxed);
        });
    LoopStopper::Attachment attached(stopper_, loop);
    metrics.set_gauges([this, &loop] {
      app::Metrics::Gauges g;
      g.threads = 1;
      g.busy = in_handler_.load(std::memory_order_relaxed);
      g.connections = static_cast<long>(loop.open_connections());
      return g;
    });
    loop.run();  // returns when stopped and every connection has closed
    metrics.set_gauges(nullptr);
  }

  void stop() override { stopper_.stop(); }

 private:
  ModelOptions options_;
  std::atomic<int> in_handler_{0};
  LoopStopper stopper_;
};

}  // namespace

std::unique_ptr<Model> make_reactor(const ModelOptions& options) {
  return std::make_unique<Reactor>(options);
}

}  // namespace concurrency
