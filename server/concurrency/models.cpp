// The table that maps --concurrency names to models.
#include "concurrency/model.hpp"

namespace concurrency {

std::unique_ptr<Model> make_per_client(const ModelOptions&);
std::unique_ptr<Model> make_pool(const ModelOptions&);

const std::vector<ModelInfo>& all_models() {
  static const std::vector<ModelInfo> models = {
      {"per-client", "a thread per connection for its whole life (blocking reads)",
       make_per_client},
      {"pool",
       "half-sync/half-async: one event-loop thread frames requests, --threads workers run them",
       make_pool},
  };
  return models;
}

const ModelInfo* find_model(const std::string& name) {
  for (const ModelInfo& m : all_models())
    if (m.name == name) return &m;
  return nullptr;
}

}  // namespace concurrency
