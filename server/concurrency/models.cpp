// The table that maps --concurrency names to models.
// The five event-loop models differ only in how a request runs (run_policy.hpp); per-client
// has its own file.
#include "concurrency/model.hpp"
#include "concurrency/run_policy.hpp"

namespace concurrency {

std::unique_ptr<Model> make_per_client(const ModelOptions&);

namespace {

std::function<std::unique_ptr<Model>(const ModelOptions&)> event_loop(RunPolicyFactory policy) {
  return [policy](const ModelOptions& options) { return make_event_loop_model(options, policy); };
}

}  // namespace

const std::vector<ModelInfo>& all_models() {
  static const std::vector<ModelInfo> models = {
      {"reactor", "one event-loop thread multiplexes every connection and runs requests inline",
       event_loop(run_inline)},
      {"per-request", "the event loop frames requests; each one gets a new thread that exits",
       event_loop(run_on_new_thread)},
      {"per-client", "a thread per connection for its whole life (blocking reads)",
       make_per_client},
      {"pool",
       "half-sync/half-async: one event-loop thread frames requests, --threads workers run them",
       event_loop(run_on_fixed_pool)},
      {"fotp",
       "frequency-oriented pool (seed 001): size = arrivals/s (times the mean service time if "
       "that is over 1 s), idle threads retire after 500 ms",
       event_loop(run_on_fotp_pool)},
      {"adaptive",
       "pool sized by Little's law on measured concurrency, smoothed, grows fast, shrinks slowly",
       event_loop(run_on_adaptive_pool)},
  };
  return models;
}

const ModelInfo* find_model(const std::string& name) {
  for (const ModelInfo& m : all_models())
    if (m.name == name) return &m;
  return nullptr;
}

}  // namespace concurrency
