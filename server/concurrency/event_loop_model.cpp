// The one model skeleton behind reactor, per-request, pool, fotp and adaptive: an EventLoop
// that frames requests on one thread, a RunPolicy that runs them, the LoopStopper that lets
// stop() reach the loop, and the gauges the metrics read.
#include "concurrency/event_loop.hpp"
#include "concurrency/run_policy.hpp"
#include "util/log.hpp"

namespace concurrency {
namespace {

class EventLoopModel : public Model {
 public:
  EventLoopModel(const ModelOptions& options, RunPolicyFactory make_policy)
      : options_(options), make_policy_(std::move(make_policy)) {}

  void run(net::Listener& listener, serving::Handler& handler,
           serving::MetricsSink& metrics) override {
    std::unique_ptr<RunPolicy> policy = make_policy_(RequestRunner(options_, handler, metrics));
    EventLoop loop(listener, options_.limits,
                   [&metrics, &policy](std::string payload, auth::Caller caller,
                                       net::AsyncConnection::ReplyFn reply) {
                     metrics.arrival();
                     policy->run(Job{std::move(payload), std::move(caller), std::move(reply)});
                   });
    LoopStopper::Attachment attached(stopper_, loop);
    metrics.set_gauges([this, &policy, &loop] {
      serving::Gauges g;
      policy->gauges(g);
      budget_gauges(options_.limits, g);
      g.connections = static_cast<long>(loop.open_connections());
      g.refused = static_cast<long>(loop.refused_connections());
      slot_gauges(loop.slots(), g);
      return g;
    });
    // Also on the way out of an exception: nothing that uses `loop` or the policy may
    // outlive them.
    struct Cleanup {
      serving::MetricsSink& metrics;
      RunPolicy& policy;
      ~Cleanup() {
        metrics.set_gauges(nullptr);
        policy.finish();
      }
    } cleanup{metrics, *policy};
    loop.run();  // returns when stopped, every connection closed and every reply written
  }

  void stop() override { stopper_.stop(); }

 private:
  ModelOptions options_;
  RunPolicyFactory make_policy_;
  LoopStopper stopper_;
};

}  // namespace

std::unique_ptr<Model> make_event_loop_model(const ModelOptions& options, RunPolicyFactory policy) {
  return std::make_unique<EventLoopModel>(options, std::move(policy));
}

}  // namespace concurrency
