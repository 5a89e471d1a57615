// pool, fotp, adaptive: half-sync/half-async. The event loop frames requests and queues them on
// a DynamicPool; its workers parse, apply and render. Workers never wait for the database: the
// reply goes back to the event loop when its batch commits, so a worker is busy only while a
// request is handled. The fixed pool keeps --threads workers; a self-sizing pool has a Sizer
// and a controller thread that asks it for a new size every period.
#include <algorithm>
#include <condition_variable>
#include <mutex>

#include <boost/thread/thread.hpp>

#include "concurrency/sizer.hpp"
#include "util/log.hpp"

namespace concurrency {
namespace {

class RunOnPool : public RunPolicy {
 public:
  // `sizer` null: a fixed pool of `limits.min_threads` == `limits.max_threads` threads.
  RunOnPool(const RequestRunner& runner, const DynamicPool::Limits& limits, unsigned initial,
            std::unique_ptr<Sizer> sizer)
      : runner_(runner),
        sizer_(std::move(sizer)),
        scan_(runner.options().simulated_io_ms_per_child > 0 ||
              (sizer_ && sizer_->wants_request_class())),
        runqueue_(sizer_ && sizer_->wants_runqueue_wait()),
        pool_(limits, initial) {
    if (sizer_) controller_ = boost::thread([this] { control(); });
  }

  ~RunOnPool() override { finish(); }

  void run(Job job) override {
    protocol::RequestShape shape =
        scan_ ? protocol::scan_request(job.payload) : protocol::RequestShape{};
    if (sizer_) sizer_->arrived(shape);
    pool_.submit([this, shape = std::move(shape), job = std::move(job)]() mutable {
      std::int64_t wait_before = runqueue_ ? thread_runqueue_wait_ns() : -1;
      Sizer::TaskTimes times;
      times.wall = runner_.run(job.payload, job.caller, std::move(job.reply),
                               scan_ ? static_cast<int>(shape.children) : -1);
      if (!sizer_) return;
      if (wait_before >= 0) {
        std::int64_t wait_after = thread_runqueue_wait_ns();
        if (wait_after >= wait_before)
          times.runqueue_wait = std::chrono::nanoseconds(wait_after - wait_before);
      }
      sizer_->finished(shape, times);
    });
  }

  void gauges(serving::Gauges& g) const override {
    DynamicPool::Stats s = pool_.stats();
    g.threads = s.threads;
    g.busy = s.busy;
    g.queued = static_cast<long>(s.queued);
    g.target = s.target;
  }

  void finish() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      controller_done_ = true;
    }
    controller_wake_.notify_all();
    if (controller_.joinable()) controller_.join();
    pool_.shutdown();
  }

 private:
  // The controller thread: every period, the sizer's new target.
  void control() {
    const auto period = sizer_->period();
    auto last = std::chrono::steady_clock::now();
    auto next = last + period;
    std::unique_lock<std::mutex> lock(mutex_);
    while (!controller_wake_.wait_until(lock, next, [this] { return controller_done_; })) {
      lock.unlock();
      auto now = std::chrono::steady_clock::now();
      DynamicPool::Stats before = pool_.stats();
      unsigned target = sizer_->decide(before, now - last);
      pool_.resize(target);
      if (pool_.stats().target != before.target)
        EXCHANGE_LOG(debug) << sizer_->name() << ": pool target " << before.target << " -> "
                            << pool_.stats().target << " (threads " << before.threads << ", busy "
                            << before.busy << ", queued " << before.queued << ")";
      last = now;
      next += period;
      if (next < now) next = now + period;  // fell behind: do not try to catch up
      lock.lock();
    }
  }

  const RequestRunner runner_;
  const std::unique_ptr<Sizer> sizer_;
  const bool scan_;      // request classes or child counts are needed
  const bool runqueue_;  // the sizer wants each task's run-queue wait
  DynamicPool pool_;
  std::mutex mutex_;
  std::condition_variable controller_wake_;
  bool controller_done_ = false;
  boost::thread controller_;
};

}  // namespace

std::unique_ptr<RunPolicy> run_on_fixed_pool(const RequestRunner& runner) {
  DynamicPool::Limits limits;
  limits.min_threads = limits.max_threads = std::max(1u, runner.options().threads);
  return std::make_unique<RunOnPool>(runner, limits, limits.min_threads, nullptr);
}

std::unique_ptr<RunPolicy> run_on_sized_pool(const RequestRunner& runner,
                                             std::unique_ptr<Sizer> sizer) {
  const ModelOptions& options = runner.options();
  DynamicPool::Limits limits;
  limits.max_threads = std::max(1u, options.max_threads);
  limits.min_threads = std::clamp(options.min_threads, 1u, limits.max_threads);
  limits.idle_timeout = sizer->idle_timeout();
  unsigned initial = sizer->initial_threads(limits);
  return std::make_unique<RunOnPool>(runner, limits, initial, std::move(sizer));
}

}  // namespace concurrency
