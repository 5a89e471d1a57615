#pragma once
// The worker pool behind the pool models (pool, fotp, adaptive): a task queue served by a
// resizable set of Boost.Thread workers. The fixed pool never resizes it; the self-sizing ones
// let a Sizer pick its size (run_on_pool.cpp).
//
// DynamicPool keeps a target size. resize() starts threads up to the target at once; a task
// that finds no idle thread starts one too, while the pool is below target. A thread retires
// when the pool is above target (after its current task), or when it has been idle for the
// idle timeout while the pool is above its minimum (an idle timeout of zero: never).
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>

#include "concurrency/thread_set.hpp"

namespace concurrency {

class DynamicPool {
 public:
  using Task = std::function<void()>;
  struct Limits {
    unsigned min_threads = 1;
    unsigned max_threads = 1024;
    std::chrono::milliseconds idle_timeout{0};
  };
  struct Stats {
    unsigned threads = 0;  // workers alive
    unsigned busy = 0;     // workers running a task
    std::size_t queued = 0;
    unsigned target = 0;
    std::uint64_t started = 0;  // threads ever started
  };

  // Starts with `initial` threads (clamped to the limits).
  DynamicPool(const Limits& limits, unsigned initial);
  // Runs what is queued, then joins every worker.
  ~DynamicPool();
  DynamicPool(const DynamicPool&) = delete;
  DynamicPool& operator=(const DynamicPool&) = delete;

  void submit(Task task);
  // Sets the target (clamped to the limits) and starts threads up to it; surplus threads retire
  // as they become idle. Also joins threads that have retired since the last call.
  void resize(unsigned target);
  // Stops taking tasks; the workers finish the queue and exit; joins them. Idempotent.
  void shutdown();
  Stats stats() const;
  const Limits& limits() const { return limits_; }

 private:
  void start_threads(std::unique_lock<std::mutex>& lock, unsigned count);
  void work();

  const Limits limits_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;      // a task, a lower target or shutdown
  std::condition_variable all_gone_;  // threads_ reached zero
  std::deque<Task> queue_;
  unsigned target_ = 0;
  unsigned threads_ = 0;  // started (or being started) and not yet retired
  unsigned idle_ = 0;     // waiting for a task
  unsigned busy_ = 0;
  unsigned starting_ = 0;  // start_threads calls creating threads outside the lock
  std::uint64_t started_ = 0;
  bool stopping_ = false;
  // The workers; a retired one is joined by the next start, resize() or shutdown().
  ThreadSet workers_;
};

}  // namespace concurrency
