#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>

#include "bench/loops.hpp"

namespace exch::bench {

namespace {

struct Job {
  std::uint64_t index;
  std::int64_t intended_ns;
  bool warmup;
  Request request;
};

}  // namespace

void run_open_loop(RunContext& ctx) {
  const BenchOptions& o = ctx.options;
  const bool by_duration = o.duration_s > 0;
  const std::int64_t stop_ns = ctx.warmup_ns + static_cast<std::int64_t>(o.duration_s * 1e9);
  const bool spawn = o.threads == ThreadMode::Spawn;
  const std::size_t n_targets = ctx.targets.size();

  std::mutex mutex;
  std::condition_variable work_cv, idle_cv;
  std::deque<Job> queue;
  std::size_t outstanding = 0;  // queued + in flight
  bool closing = false;

  auto finished_one = [&] {
    std::lock_guard<std::mutex> lock(mutex);
    if (--outstanding == 0) idle_cv.notify_all();
  };

  std::vector<std::thread> senders;
  if (!spawn) {
    for (unsigned i = 0; i < o.senders; ++i) {
      senders.emplace_back([&] {
        Executor executor(ctx.targets, executor_mode(false, n_targets), ctx.tb);
        std::vector<Sample> samples;
        for (;;) {
          Job job;
          {
            std::unique_lock<std::mutex> lock(mutex);
            work_cv.wait(lock, [&] { return closing || !queue.empty(); });
            if (queue.empty()) break;
            job = std::move(queue.front());
            queue.pop_front();
          }
          samples.push_back(
              ctx.execute(executor, job.request, job.index, job.intended_ns, job.warmup));
          finished_one();
        }
        ctx.add_samples(std::move(samples));
      });
    }
  }

  Rng arrivals(o.seed, (static_cast<std::uint64_t>(ctx.rep) << 32) | 0xA771u);
  Rng content(o.seed, (static_cast<std::uint64_t>(ctx.rep) << 32) | 0xC047u);
  const double mean_gap_ns = 1e9 / o.rate;
  double t_ns = 0;
  std::uint64_t measured = 0;
  std::vector<Sample> dropped;
  for (std::uint64_t index = 0; !ctx.should_stop(); ++index) {
    t_ns += arrivals.exponential(mean_gap_ns);
    auto intended = static_cast<std::int64_t>(t_ns);
    bool warm = intended < ctx.warmup_ns;
    if (by_duration) {
      if (intended >= stop_ns) break;
    } else if (!warm) {
      if (measured >= o.requests) break;
      ++measured;
    }
    std::this_thread::sleep_until(ctx.tb.at(intended));

    bool full;
    {
      std::lock_guard<std::mutex> lock(mutex);
      full = outstanding >= o.max_inflight;
      if (!full) ++outstanding;
    }
    if (full) {
      dropped.push_back(ctx.dropped(index, intended, warm));
      continue;
    }
    Request request = ctx.workload.next(content);
    if (!spawn) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        queue.push_back(Job{index, intended, warm, std::move(request)});
      }
      work_cv.notify_one();
      continue;
    }
    try {
      std::thread([&ctx, &finished_one, n_targets, index, intended, warm,
                   request = std::move(request)] {
        {
          Executor executor(ctx.targets, executor_mode(n_targets > 1, n_targets), ctx.tb);
          std::vector<Sample> one{ctx.execute(executor, request, index, intended, warm)};
          ctx.add_samples(std::move(one));
        }
        finished_one();  // last touch of this function's state
      }).detach();
    } catch (const std::system_error& e) {
      ctx.note_error(std::string("cannot start a thread: ") + e.what());
      dropped.push_back(ctx.dropped(index, intended, warm));
      finished_one();
    }
  }

  {
    std::unique_lock<std::mutex> lock(mutex);
    idle_cv.wait(lock, [&] { return outstanding == 0; });
    closing = true;
  }
  work_cv.notify_all();
  for (auto& s : senders) s.join();
  ctx.add_samples(std::move(dropped));
}

}  // namespace exch::bench
