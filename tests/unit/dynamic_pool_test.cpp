// concurrency::DynamicPool: the resizable worker set behind pool, fotp and adaptive. Every task
// runs exactly once; resize() grows at once and shrinks as workers become idle; the limits
// clamp the target; shutdown runs what is queued and joins every worker.
#include "concurrency/dynamic_pool.hpp"

#include <atomic>
#include <chrono>
#include <thread>

#include <catch2/catch.hpp>

using concurrency::DynamicPool;

namespace {

// Polls `pred` for up to 5 s.
template <typename Pred>
bool eventually(Pred pred) {
  for (int i = 0; i < 500; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

}  // namespace

TEST_CASE("Every task runs once, and shutdown runs the queue", "[unit][pool]") {
  std::atomic<int> ran{0};
  {
    DynamicPool pool({1, 8, std::chrono::milliseconds(0)}, 2);
    for (int i = 0; i < 1000; ++i) pool.submit([&] { ++ran; });
    pool.shutdown();
    CHECK(pool.stats().threads == 0);
  }
  CHECK(ran == 1000);
}

TEST_CASE("Resizing grows at once, shrinks as workers go idle, within the limits", "[unit][pool]") {
  DynamicPool pool({2, 6, std::chrono::milliseconds(0)}, 2);
  CHECK(pool.stats().threads == 2);
  pool.resize(5);
  CHECK(pool.stats().target == 5);
  CHECK(eventually([&] { return pool.stats().threads == 5; }));
  pool.resize(100);  // clamped to max_threads
  CHECK(pool.stats().target == 6);
  pool.resize(0);  // clamped to min_threads
  CHECK(pool.stats().target == 2);
  CHECK(eventually([&] {
    pool.resize(2);  // also joins the retired
    return pool.stats().threads == 2;
  }));
  // Busy workers are counted while they run.
  std::atomic<bool> go{false};
  std::atomic<int> started{0};
  for (int i = 0; i < 2; ++i)
    pool.submit([&] {
      ++started;
      while (!go) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
  CHECK(eventually([&] { return started == 2; }));
  CHECK(pool.stats().busy == 2);
  go = true;
  CHECK(eventually([&] { return pool.stats().busy == 0; }));
}

TEST_CASE("An idle timeout retires workers above the minimum", "[unit][pool]") {
  DynamicPool pool({1, 4, std::chrono::milliseconds(50)}, 1);
  pool.resize(4);
  CHECK(eventually([&] { return pool.stats().threads == 4; }));
  pool.resize(1);
  CHECK(eventually([&] {
    pool.resize(1);
    return pool.stats().threads == 1;
  }));
  CHECK(pool.stats().started >= 4);
}
