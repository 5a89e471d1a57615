#pragma once
// A sizing rule for a self-sizing pool (fotp.cpp, adaptive.cpp). Its hooks run on different
// threads (arrived on the event loop, finished on workers, decide on the pool's controller
// thread), so it synchronises its own state.
#include <chrono>
#include <memory>

#include "concurrency/dynamic_pool.hpp"
#include "concurrency/run_policy.hpp"
#include "protocol/request_shape.hpp"

namespace concurrency {

class Sizer {
 public:
  struct TaskTimes {
    std::chrono::nanoseconds wall{0};  // in the worker: simulated I/O and the handler call
    // Of that, runnable but waiting for a CPU (-1: unknown or not measured).
    std::chrono::nanoseconds runqueue_wait{-1};
  };

  virtual ~Sizer() = default;
  virtual const char* name() const = 0;
  // How often decide() runs.
  virtual std::chrono::milliseconds period() const = 0;
  // Idle retirement of the pool (0: only surplus threads above the target retire).
  virtual std::chrono::milliseconds idle_timeout() const = 0;
  virtual unsigned initial_threads(const DynamicPool::Limits& limits) const = 0;
  // Whether arrived/finished need request classes (protocol::scan_request).
  virtual bool wants_request_class() const { return false; }
  // Whether finished() wants the run-queue wait (costs two small reads per request).
  virtual bool wants_runqueue_wait() const { return false; }

  // A request was received (before it is queued). `shape` is empty unless wanted.
  virtual void arrived(const protocol::RequestShape& shape) = 0;
  // A worker finished running the request.
  virtual void finished(const protocol::RequestShape& shape, const TaskTimes& times) = 0;
  // Every period: the new target size. `elapsed` is the time since the previous call.
  virtual unsigned decide(const DynamicPool::Stats& now, std::chrono::nanoseconds elapsed) = 0;
};

// The two rules (fotp.cpp, adaptive.cpp), also for their unit test (sizer_test.cpp).
std::unique_ptr<Sizer> make_fotp_sizer();
// `floor` and `ceiling` bound its target: adaptive_bounds().
std::unique_ptr<Sizer> make_adaptive_sizer(unsigned floor, unsigned ceiling);
struct SizeBounds {
  unsigned floor, ceiling;
};
// adaptive's bounds: [max(--min-threads, cores), --max-threads], at least 1.
SizeBounds adaptive_bounds(unsigned min_threads, unsigned max_threads, unsigned cores);

// Half-sync/half-async like `pool`, on a DynamicPool that `sizer` resizes every period.
std::unique_ptr<RunPolicy> run_on_sized_pool(const RequestRunner& runner,
                                             std::unique_ptr<Sizer> sizer);

}  // namespace concurrency
