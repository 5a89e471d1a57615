#pragma once
// A concurrency model decides which threads accept connections, read requests, run the
// handler and write replies. Every model serves the same serving::Handler and reports to the
// serving::MetricsSink it is handed; an event-loop model is a RunPolicy (run_policy.hpp) plus
// one line in models.cpp.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "net/framing.hpp"
#include "net/listener.hpp"
#include "net/pending_slots.hpp"
#include "serving/handler.hpp"
#include "serving/metrics_sink.hpp"

namespace concurrency {

struct ModelOptions {
  unsigned threads = 4;  // pool size of the fixed pool
  // Bounds of the dynamic pools (fotp, adaptive).
  unsigned min_threads = 4;
  unsigned max_threads = 1024;
  // Benchmarking aid: each child of a request sleeps this long in the thread that runs the
  // handler, before the handler and outside every lock, as if it did blocking I/O.
  unsigned simulated_io_ms_per_child = 0;
  net::ConnectionLimits limits;
};

class Model {
 public:
  virtual ~Model() = default;
  // Serves connections with `handler` until stop(); returns once every accepted request is
  // answered. Counts arrivals and completions in `metrics` and publishes its gauges there
  // while it runs. Both outlive run().
  virtual void run(net::Listener& listener, serving::Handler& handler,
                   serving::MetricsSink& metrics) = 0;
  // Stops accepting and lets run() return. Thread-safe; called from the signal thread.
  virtual void stop() = 0;
};

struct ModelInfo {
  std::string name;
  std::string description;  // one line, for --help
  std::function<std::unique_ptr<Model>(const ModelOptions&)> make;
};

// Every model, in the order --help lists them.
const std::vector<ModelInfo>& all_models();
// Null if no model has that name.
const ModelInfo* find_model(const std::string& name);

// The buffer budget's figures in a model's gauges (left out when there is no budget).
inline void budget_gauges(const net::ConnectionLimits& limits, serving::Gauges& g) {
  if (!limits.budget) return;
  g.buffered_bytes = static_cast<long>(limits.budget->used());
  g.buffered_limit = static_cast<long>(limits.budget->limit());
  g.buffer_refused = static_cast<long>(limits.budget->refusals());
}

// The connections not yet authenticated, and how many gave way to newcomers.
inline void slot_gauges(const net::PendingSlots& slots, serving::Gauges& g) {
  g.pending = static_cast<long>(slots.pending());
  g.evicted = static_cast<long>(slots.evicted());
}

}  // namespace concurrency
