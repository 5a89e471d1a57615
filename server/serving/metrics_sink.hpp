#pragma once
// Where a concurrency model reports: every request's arrival, the time its handler call took,
// and the model's gauges (threads, queue, connections). app::Metrics is the sink of both
// serving binaries; a model is handed one with the Handler it serves (concurrency::Model::run)
// and never owns it.
#include <chrono>
#include <functional>

namespace serving {

// The model's gauges, sampled when the metrics are read. A negative value means "does not
// apply" (the reactor has no queue, only the dynamic pools have a target size).
struct Gauges {
  long threads = -1;
  long busy = -1;
  long queued = -1;
  long connections = -1;
  long target = -1;
  long refused = -1;  // connections turned away ("Server busy") since the start
  // Connections not yet authenticated, and those closed for a newcomer since the start
  // (net/pending_slots.hpp).
  long pending = -1;
  long evicted = -1;
  // The budget across connections (--max-buffered-bytes): bytes charged now, the limit, and
  // connections told "Server busy" and closed for it since the start.
  long buffered_bytes = -1;
  long buffered_limit = -1;
  long buffer_refused = -1;
};

class MetricsSink {
 public:
  using GaugeFn = std::function<Gauges()>;
  virtual ~MetricsSink() = default;

  // A request was framed and handed to the model. Any thread; must not block.
  virtual void arrival() = 0;
  // A request's handler call finished after `service` (the simulated I/O included, the wait for
  // the group commit excluded). Any thread.
  virtual void completion(std::chrono::nanoseconds service) = 0;
  // The model's gauges; an empty function clears them. Once this returns, the previous function
  // is no longer running and is never called again, so a model clears it before what it reads
  // goes away. Must not be called while holding a lock the function takes.
  virtual void set_gauges(GaugeFn gauges) = 0;
};

}  // namespace serving
