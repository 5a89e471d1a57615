#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <thread>

#include "bench/loops.hpp"

namespace exch::bench {

namespace {

// Sleeps until `until_ns`, but wakes for the end of the run or Ctrl-C: an
// exponential think time has a long tail, and the run must not outlast
// --duration by it. Slices of at most 50 ms keep the wake-up prompt.
void think(const RunContext& ctx, std::int64_t until_ns, std::int64_t stop_ns) {
  constexpr std::int64_t kSliceNs = 50'000'000;
  until_ns = std::min(until_ns, stop_ns);
  for (std::int64_t now = ctx.tb.now_ns(); now < until_ns && !ctx.should_stop();
       now = ctx.tb.now_ns())
    std::this_thread::sleep_until(ctx.tb.at(std::min(until_ns, now + kSliceNs)));
}

}  // namespace

void run_closed_loop(RunContext& ctx) {
  const BenchOptions& o = ctx.options;
  const bool by_duration = o.duration_s > 0;
  const std::int64_t stop_ns = ctx.warmup_ns + static_cast<std::int64_t>(o.duration_s * 1e9);
  std::atomic<std::uint64_t> measured{0};  // claimed measured requests
  std::atomic<std::uint64_t> sequence{0};
  const auto mode = executor_mode(o.threads == ThreadMode::Spawn, ctx.targets.size());

  auto client = [&](unsigned id) {
    Rng rng(o.seed, (static_cast<std::uint64_t>(ctx.rep) << 32) | id);
    Rng think_rng(o.seed, (static_cast<std::uint64_t>(ctx.rep) << 32) | id | (1ull << 31));
    Executor executor(ctx.targets, mode, ctx.tb);
    std::vector<Sample> samples;
    while (!ctx.should_stop()) {
      std::int64_t now = ctx.tb.now_ns();
      bool warm = now < ctx.warmup_ns;
      if (by_duration) {
        if (now >= stop_ns) break;
      } else if (!warm && measured.fetch_add(1) >= o.requests) {
        break;
      }
      Request request = ctx.workload.next(rng);
      std::uint64_t index = sequence.fetch_add(1);
      samples.push_back(ctx.execute(executor, request, index, ctx.tb.now_ns(), warm));
      if (o.think_ms > 0) {
        auto pause_ns = static_cast<std::int64_t>(think_rng.exponential(o.think_ms) * 1e6);
        think(ctx, ctx.tb.now_ns() + pause_ns,
              by_duration ? stop_ns : std::numeric_limits<std::int64_t>::max());
      }
    }
    ctx.add_samples(std::move(samples));
  };

  std::vector<std::thread> threads;
  threads.reserve(o.clients);
  for (unsigned c = 0; c < o.clients; ++c) threads.emplace_back(client, c);
  for (auto& t : threads) t.join();
}

}  // namespace exch::bench
