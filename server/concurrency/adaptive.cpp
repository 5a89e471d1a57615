// adaptive: our self-sizing pool, meant to beat fotp on this exchange's short requests, where
// fotp's "pool = λ" asks for a thread per request per second (thousands) although a handful
// are ever busy at once.
//
// The controller (every 250 ms, on the DynamicPool):
//
//   Measure.   λ = arrivals per second since the last tick. For each request that finished,
//              the time it spent in the worker (simulated I/O + handler call, not the commit
//              wait), minus the part of it the thread spent runnable but waiting for a CPU
//              (from /proc/thread-self/schedstat): S = mean of that "useful" time. CPU
//              contention is taken out because more threads cannot shorten it, they lengthen
//              it: counting it would let an overloaded CPU ask for ever more threads.
//   Smooth.    λ and S are exponentially weighted moving averages (α = 0.3, so a change is
//              mostly absorbed within about a second).
//   Size.      By Little's law the mean number of requests in the worker stage is L = λ·S;
//              the wanted size is ceil(1.25 · L) (25% headroom for bursts).
//   Backlog.   If requests have been queued at two ticks in a row and the workers are not
//              CPU-bound (less than half of their time was spent waiting for a CPU), the pool
//              is short of threads, not of cores: the wanted size is at least busy + queued,
//              at most twice the current threads. This grows the pool fast (doubling every
//              250 ms) while the averages catch up.
//   Bound.     Never below max(--min-threads, cores), never above --max-threads.
//   Grow fast. A wanted size above the current target is applied at once (threads start
//              immediately).
//   Shrink slowly, with hysteresis. A wanted size within 80% of the target changes nothing.
//              Below that for 4 ticks in a row (1 s), the target moves a quarter of the way
//              down each tick (at least one thread); surplus threads retire once idle. There
//              is no idle timeout: the controller alone decides the size.
//
// Known limit: time spent waiting for the engine lock counts as useful time, so a load that is
// bound by the lock (with idle CPUs) can look like one that needs more threads; --max-threads
// bounds that.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "concurrency/sizer.hpp"

namespace concurrency {
namespace {

constexpr double kAlpha = 0.3;
constexpr double kHeadroom = 1.25;
constexpr double kShrinkBand = 0.8;
constexpr int kShrinkAfterTicks = 4;
constexpr double kCpuBoundShare = 0.5;

class AdaptiveSizer : public Sizer {
 public:
  AdaptiveSizer(unsigned floor, unsigned ceiling) : floor_(floor), ceiling_(ceiling) {}

  const char* name() const override { return "adaptive"; }
  std::chrono::milliseconds period() const override { return std::chrono::milliseconds(250); }
  std::chrono::milliseconds idle_timeout() const override { return std::chrono::milliseconds(0); }
  unsigned initial_threads(const DynamicPool::Limits&) const override { return floor_; }
  bool wants_runqueue_wait() const override { return true; }

  void arrived(const protocol::RequestShape&) override {
    arrivals_.fetch_add(1, std::memory_order_relaxed);
  }

  void finished(const protocol::RequestShape&, const TaskTimes& times) override {
    std::int64_t wall = times.wall.count();
    std::int64_t waited = std::clamp<std::int64_t>(times.runqueue_wait.count(), 0, wall);
    wall_ns_.fetch_add(wall, std::memory_order_relaxed);
    runqueue_ns_.fetch_add(waited, std::memory_order_relaxed);
    completions_.fetch_add(1, std::memory_order_relaxed);
  }

  unsigned decide(const DynamicPool::Stats& now, std::chrono::nanoseconds elapsed) override {
    // Only the controller thread runs this; the counters are the only shared state.
    double seconds = std::max(1e-3, std::chrono::duration<double>(elapsed).count());
    std::uint64_t arrivals = arrivals_.exchange(0, std::memory_order_relaxed);
    std::uint64_t completions = completions_.exchange(0, std::memory_order_relaxed);
    std::int64_t wall = wall_ns_.exchange(0, std::memory_order_relaxed);
    std::int64_t waited = runqueue_ns_.exchange(0, std::memory_order_relaxed);

    double lambda = static_cast<double>(arrivals) / seconds;
    lambda_ = first_tick_ ? lambda : lambda_ + kAlpha * (lambda - lambda_);
    first_tick_ = false;
    if (completions > 0) {
      double useful = static_cast<double>(std::max<std::int64_t>(0, wall - waited)) / 1e9 /
                      static_cast<double>(completions);
      service_ = have_service_ ? service_ + kAlpha * (useful - service_) : useful;
      have_service_ = true;
      cpu_bound_ = wall > 0 && static_cast<double>(waited) >= kCpuBoundShare * wall;
    }

    double want = std::ceil(kHeadroom * lambda_ * service_);
    bool backlog = now.queued > 0;
    if (backlog && backlog_before_ && !cpu_bound_) {
      double threads = std::max(1u, now.threads);
      want = std::max(want, std::min(2 * threads, static_cast<double>(now.busy + now.queued)));
    }
    backlog_before_ = backlog;
    unsigned wanted =
        static_cast<unsigned>(std::clamp(want, static_cast<double>(floor_), double(ceiling_)));

    if (target_ == 0) target_ = floor_;
    if (wanted > target_) {
      target_ = wanted;
      ticks_below_ = 0;
    } else if (wanted < kShrinkBand * target_) {
      if (++ticks_below_ >= kShrinkAfterTicks) target_ -= std::max(1u, (target_ - wanted + 3) / 4);
    } else {
      ticks_below_ = 0;
    }
    return target_;
  }

 private:
  const unsigned floor_;
  const unsigned ceiling_;
  std::atomic<std::uint64_t> arrivals_{0};
  std::atomic<std::uint64_t> completions_{0};
  std::atomic<std::int64_t> wall_ns_{0};
  std::atomic<std::int64_t> runqueue_ns_{0};
  // Controller state.
  bool first_tick_ = true;
  double lambda_ = 0;   // requests per second (EWMA)
  double service_ = 0;  // useful seconds in the worker per request (EWMA)
  bool have_service_ = false;
  bool cpu_bound_ = false;
  bool backlog_before_ = false;
  unsigned target_ = 0;
  int ticks_below_ = 0;
};

}  // namespace

std::unique_ptr<Sizer> make_adaptive_sizer(unsigned floor, unsigned ceiling) {
  return std::make_unique<AdaptiveSizer>(floor, ceiling);
}

SizeBounds adaptive_bounds(unsigned min_threads, unsigned max_threads, unsigned cores) {
  unsigned ceiling = std::max(1u, max_threads);
  unsigned floor = std::clamp(std::max(min_threads, std::max(1u, cores)), 1u, ceiling);
  return {floor, ceiling};
}

std::unique_ptr<RunPolicy> run_on_adaptive_pool(const RequestRunner& runner) {
  const ModelOptions& options = runner.options();
  const SizeBounds bounds = adaptive_bounds(options.min_threads, options.max_threads,
                                            std::thread::hardware_concurrency());
  return run_on_sized_pool(runner, make_adaptive_sizer(bounds.floor, bounds.ceiling));
}

}  // namespace concurrency
