// The table that maps --concurrency names to models.
#include "concurrency/model.hpp"

namespace concurrency {

std::unique_ptr<Model> make_reactor(const ModelOptions&);
std::unique_ptr<Model> make_per_request(const ModelOptions&);
std::unique_ptr<Model> make_per_client(const ModelOptions&);
std::unique_ptr<Model> make_pool(const ModelOptions&);
std::unique_ptr<Model> make_fotp(const ModelOptions&);
std::unique_ptr<Model> make_adaptive(const ModelOptions&);

const std::vector<ModelInfo>& all_models() {
  static const std::vector<ModelInfo> models = {
      {"reactor", "one event-loop thread multiplexes every connection and runs requests inline",
       make_reactor},
      {"per-request", "the event loop frames requests; each one gets a new thread that exits",
       make_per_request},
      {"per-client", "a thread per connection for its whole life (blocking reads)",
       make_per_client},
      {"pool",
       "half-sync/half-async: one event-loop thread frames requests, --threads workers run them",
       make_pool},
      {"fotp",
       "frequency-oriented pool (seed 001): size = arrivals/s (times the mean service time if "
       "that is over 1 s), idle threads retire after 500 ms",
       make_fotp},
      {"adaptive",
       "pool sized by Little's law on measured concurrency, smoothed, grows fast, shrinks slowly",
       make_adaptive},
  };
  return models;
}

const ModelInfo* find_model(const std::string& name) {
  for (const ModelInfo& m : all_models())
    if (m.name == name) return &m;
  return nullptr;
}

}  // namespace concurrency
