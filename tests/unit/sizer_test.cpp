// The pool sizers (concurrency/fotp.cpp, adaptive.cpp) alone: given arrivals, finished
// timings and the pool's stats, decide() returns the sizes docs/ARCHITECTURE.md promises
// ("Concurrency models"). The pool applying them is dynamic_pool_test's.
#include "concurrency/sizer.hpp"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

using concurrency::DynamicPool;
using concurrency::Sizer;
using namespace std::chrono_literals;

namespace {

protocol::RequestShape shape(const std::string& key) {
  protocol::RequestShape s;
  s.key = key;
  return s;
}

Sizer::TaskTimes took(std::chrono::nanoseconds wall,
                      std::chrono::nanoseconds runqueue_wait = std::chrono::nanoseconds(-1)) {
  Sizer::TaskTimes t;
  t.wall = wall;
  t.runqueue_wait = runqueue_wait;
  return t;
}

void arrive(Sizer& sizer, const std::string& key, int n) {
  for (int i = 0; i < n; ++i) sizer.arrived(shape(key));
}

DynamicPool::Stats idle_pool(unsigned threads) {
  DynamicPool::Stats s;
  s.threads = threads;
  s.target = threads;
  return s;
}

DynamicPool::Stats backlog(unsigned threads, std::size_t queued) {
  DynamicPool::Stats s;
  s.threads = threads;
  s.busy = threads;
  s.queued = queued;
  s.target = threads;
  return s;
}

}  // namespace

TEST_CASE("fotp: its settings", "[unit][sizer]") {
  auto fotp = concurrency::make_fotp_sizer();
  CHECK(std::string(fotp->name()) == "fotp");
  CHECK(fotp->period() == 1s);
  CHECK(fotp->idle_timeout() == 500ms);
  CHECK(fotp->wants_request_class());
  CHECK_FALSE(fotp->wants_runqueue_wait());
  CHECK(fotp->initial_threads({3, 50, 0ms}) == 3);
}

TEST_CASE("fotp: pool = λ while the mean service time is at most 1 s", "[unit][sizer]") {
  auto fotp = concurrency::make_fotp_sizer();
  CHECK(fotp->decide(idle_pool(1), 1s) == 0);  // nothing arrived
  fotp->finished(shape("transactions:order1"), took(10ms));
  arrive(*fotp, "transactions:order1", 100);
  CHECK(fotp->decide(idle_pool(1), 1s) == 100);
  // The counters start again every period.
  CHECK(fotp->decide(idle_pool(100), 1s) == 0);
  // λ is per second of the period that elapsed, rounded up.
  arrive(*fotp, "transactions:order1", 50);
  CHECK(fotp->decide(idle_pool(1), 500ms) == 100);
  arrive(*fotp, "transactions:order1", 3);
  CHECK(fotp->decide(idle_pool(1), 2s) == 2);
  // Unprofiled classes count into λ with a service time of 0.
  arrive(*fotp, "create:account1", 7);
  CHECK(fotp->decide(idle_pool(1), 1s) == 7);
}

TEST_CASE("fotp: pool = λ · mean service time past 1 s; a class is profiled once",
          "[unit][sizer]") {
  auto fotp = concurrency::make_fotp_sizer();
  fotp->finished(shape("slow"), took(2s));
  fotp->finished(shape("slow"), took(10ms));  // the first measurement stays
  arrive(*fotp, "slow", 10);
  CHECK(fotp->decide(idle_pool(1), 1s) == 20);
  // Mixed: (3 s + 0.01 s) / 2 > 1 s, so 2/s · 1.505 s = 3.01, rounded up.
  fotp->finished(shape("slower"), took(3s));
  fotp->finished(shape("fast"), took(10ms));
  arrive(*fotp, "slower", 1);
  arrive(*fotp, "fast", 1);
  CHECK(fotp->decide(idle_pool(1), 1s) == 4);
  // Arrivals before their class was profiled counted 0.
  arrive(*fotp, "later", 4);
  fotp->finished(shape("later"), took(5s));
  CHECK(fotp->decide(idle_pool(1), 1s) == 4);
}

TEST_CASE("fotp: arrivals from many threads are all counted", "[unit][sizer]") {
  auto fotp = concurrency::make_fotp_sizer();
  fotp->finished(shape("a"), took(1ms));
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5000; ++i) {
        fotp->arrived(shape("a"));
        fotp->finished(shape(t % 2 ? "a" : "b" + std::to_string(i % 50)), took(1ms));
      }
    });
  std::uint64_t total = 0;
  std::thread controller([&] {
    while (!done.load()) {
      total += fotp->decide(idle_pool(1), 1s);
      std::this_thread::sleep_for(1ms);
    }
  });
  for (auto& t : threads) t.join();
  done = true;
  controller.join();
  total += fotp->decide(idle_pool(1), 1s);
  CHECK(total == 20000);  // per 1 s period, pool = λ = the arrivals
}

TEST_CASE("adaptive: its bounds are [max(--min-threads, cores), --max-threads]", "[unit][sizer]") {
  auto b = concurrency::adaptive_bounds(1, 64, 2);
  CHECK((b.floor == 2 && b.ceiling == 64));
  b = concurrency::adaptive_bounds(8, 64, 2);
  CHECK((b.floor == 8 && b.ceiling == 64));
  b = concurrency::adaptive_bounds(100, 16, 2);
  CHECK((b.floor == 16 && b.ceiling == 16));
  b = concurrency::adaptive_bounds(0, 0, 0);
  CHECK((b.floor == 1 && b.ceiling == 1));

  auto adaptive = concurrency::make_adaptive_sizer(2, 64);
  CHECK(std::string(adaptive->name()) == "adaptive");
  CHECK(adaptive->period() == 250ms);
  CHECK(adaptive->idle_timeout() == 0ms);
  CHECK(adaptive->initial_threads({1, 64, 0ms}) == 2);
  CHECK(adaptive->wants_runqueue_wait());
  CHECK_FALSE(adaptive->wants_request_class());
}

TEST_CASE("adaptive: Little's law with headroom, grown at once, within the bounds",
          "[unit][sizer]") {
  auto adaptive = concurrency::make_adaptive_sizer(2, 64);
  // Nothing measured yet: the floor.
  CHECK(adaptive->decide(idle_pool(2), 250ms) == 2);

  adaptive = concurrency::make_adaptive_sizer(2, 64);
  // λ = 400/s, S = 50 ms: L = 20, ⌈1.25 · 20⌉ = 25, applied at once.
  arrive(*adaptive, "", 400);
  for (int i = 0; i < 400; ++i) adaptive->finished(shape(""), took(50ms, 0ms));
  CHECK(adaptive->decide(idle_pool(2), 1s) == 25);

  // Far more than the ceiling: the ceiling.
  adaptive = concurrency::make_adaptive_sizer(2, 16);
  arrive(*adaptive, "", 10000);
  for (int i = 0; i < 100; ++i) adaptive->finished(shape(""), took(100ms, 0ms));
  CHECK(adaptive->decide(idle_pool(2), 1s) == 16);
}

TEST_CASE("adaptive: time waiting for a CPU is not useful time", "[unit][sizer]") {
  // 100/s of 100 ms in the worker, 60 ms of it runnable but waiting: S = 40 ms, ⌈1.25 · 4⌉.
  auto adaptive = concurrency::make_adaptive_sizer(2, 64);
  arrive(*adaptive, "", 100);
  for (int i = 0; i < 100; ++i) adaptive->finished(shape(""), took(100ms, 60ms));
  CHECK(adaptive->decide(idle_pool(2), 1s) == 5);
  // Unknown (-1): the whole wall time counts, ⌈1.25 · 10⌉.
  adaptive = concurrency::make_adaptive_sizer(2, 64);
  arrive(*adaptive, "", 100);
  for (int i = 0; i < 100; ++i) adaptive->finished(shape(""), took(100ms));
  CHECK(adaptive->decide(idle_pool(2), 1s) == 13);
}

TEST_CASE("adaptive: λ is smoothed; shrinking waits 4 ticks below 80 %, then a quarter per tick",
          "[unit][sizer]") {
  auto adaptive = concurrency::make_adaptive_sizer(2, 64);
  arrive(*adaptive, "", 400);
  for (int i = 0; i < 400; ++i) adaptive->finished(shape(""), took(50ms, 0ms));
  REQUIRE(adaptive->decide(idle_pool(2), 1s) == 25);
  // No arrivals: λ falls by 30 % a tick (280, 196, 137.2, 96.04 per second), S stays 50 ms, so
  // the wanted size is 18, 13, 9, 7: below 80 % of 25, but only the fourth tick moves, by
  // ⌈(25 - 7) / 4⌉ = 5.
  CHECK(adaptive->decide(idle_pool(25), 1s) == 25);
  CHECK(adaptive->decide(idle_pool(25), 1s) == 25);
  CHECK(adaptive->decide(idle_pool(25), 1s) == 25);
  CHECK(adaptive->decide(idle_pool(25), 1s) == 20);
  // λ 67.2 → 5 wanted: 20 - ⌈15 / 4⌉.
  CHECK(adaptive->decide(idle_pool(20), 1s) == 16);
  // Then down to the floor, never below it.
  unsigned target = 16;
  for (int i = 0; i < 40; ++i) {
    unsigned next = adaptive->decide(idle_pool(target), 1s);
    CHECK(next <= target);
    target = next;
  }
  CHECK(target == 2);
}

TEST_CASE("adaptive: a wanted size within 80 % of the target changes nothing", "[unit][sizer]") {
  auto adaptive = concurrency::make_adaptive_sizer(2, 64);
  arrive(*adaptive, "", 400);
  for (int i = 0; i < 400; ++i) adaptive->finished(shape(""), took(50ms, 0ms));
  REQUIRE(adaptive->decide(idle_pool(2), 1s) == 25);
  // λ steady at 400/s (S 50 ms): wanted 25 again; then 340/s, wanted 22
  // (within 80 % of 25).
  for (int tick = 0; tick < 10; ++tick) {
    arrive(*adaptive, "", 400);
    CHECK(adaptive->decide(idle_pool(25), 1s) == 25);
  }
  for (int tick = 0; tick < 10; ++tick) {
    arrive(*adaptive, "", 340);
    CHECK(adaptive->decide(idle_pool(25), 1s) == 25);
  }
}

TEST_CASE("adaptive: a backlog at two ticks in a row grows to busy + queued, at most doubling",
          "[unit][sizer]") {
  auto adaptive = concurrency::make_adaptive_sizer(2, 64);
  // Requests finishing with no CPU wait: not CPU-bound.
  adaptive->finished(shape(""), took(1ms, 0ms));
  CHECK(adaptive->decide(backlog(4, 20), 250ms) == 2);    // the first tick with a queue: wait
  CHECK(adaptive->decide(backlog(4, 20), 250ms) == 8);    // min(2 · 4, 4 + 20)
  CHECK(adaptive->decide(backlog(8, 100), 250ms) == 16);  // doubling again
  CHECK(adaptive->decide(backlog(16, 3), 250ms) == 19);   // busy + queued
  CHECK(adaptive->decide(backlog(19, 3), 250ms) == 22);
}

TEST_CASE("adaptive: no backlog growth while the workers wait for CPUs", "[unit][sizer]") {
  auto adaptive = concurrency::make_adaptive_sizer(2, 64);
  // Half or more of the worker time waiting for a CPU: more threads would not help.
  adaptive->finished(shape(""), took(10ms, 6ms));
  CHECK(adaptive->decide(backlog(4, 20), 250ms) == 2);
  CHECK(adaptive->decide(backlog(4, 20), 250ms) == 2);
  CHECK(adaptive->decide(backlog(4, 20), 250ms) == 2);
  // A backlog at one tick only grows nothing either.
  adaptive = concurrency::make_adaptive_sizer(2, 64);
  adaptive->finished(shape(""), took(1ms, 0ms));
  CHECK(adaptive->decide(backlog(4, 20), 250ms) == 2);
  CHECK(adaptive->decide(idle_pool(4), 250ms) == 2);
  CHECK(adaptive->decide(backlog(4, 20), 250ms) == 2);
}

TEST_CASE("adaptive: arrivals and completions from many threads", "[unit][sizer]") {
  auto adaptive = concurrency::make_adaptive_sizer(1, 1024);
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 5000; ++i) {
        adaptive->arrived(shape(""));
        adaptive->finished(shape(""), took(1ms, 0ms));
      }
    });
  std::atomic<int> out_of_bounds{0};  // Catch's assertions are for the test's thread only
  std::thread controller([&] {
    while (!done.load()) {
      unsigned target = adaptive->decide(idle_pool(1), 250ms);
      if (target < 1 || target > 1024) ++out_of_bounds;
      std::this_thread::sleep_for(1ms);
    }
  });
  for (auto& t : threads) t.join();
  done = true;
  controller.join();
  CHECK(out_of_bounds == 0);
}
