// HeavyRequests (gates/heavy_requests.hpp): heavy requests run one at a time, in order, only while
// the bytes started and not yet finished stay within the bound; past the queue bound they are
// refused; those still waiting at the end are refused, never dropped. And MemoryBudget
// (gates/memory_budget.hpp) reads this process's resident memory.
#include "gates/heavy_requests.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "gates/memory_budget.hpp"

namespace {

constexpr std::size_t MiB = 1024 * 1024;

// What the heavy thread did, for the test thread to wait on.
struct Log {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> events;
  std::vector<app::HeavyRequests::Finished> unfinished;

  void add(std::string e, app::HeavyRequests::Finished f = nullptr) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      events.push_back(std::move(e));
      if (f) unfinished.push_back(std::move(f));
    }
    changed.notify_all();
  }
  // Waits up to `at_most` until there are `n` events.
  bool wait_for(std::size_t n, std::chrono::milliseconds at_most = std::chrono::seconds(5)) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, at_most, [&] { return events.size() >= n; });
  }
  std::size_t count() {
    std::lock_guard<std::mutex> lock(mutex);
    return events.size();
  }
  // Finishes the oldest request still running.
  void finish_one() {
    app::HeavyRequests::Finished f;
    {
      std::lock_guard<std::mutex> lock(mutex);
      f = std::move(unfinished.front());
      unfinished.erase(unfinished.begin());
    }
    f();
  }
};

app::HeavyRequests::Run runs(Log& log, std::string name) {
  return [&log, name](app::HeavyRequests::Finished f) { log.add("run " + name, std::move(f)); };
}

app::HeavyRequests::Refuse refuses(Log& log, std::string name) {
  return [&log, name](app::HeavyRequests::Refusal why) {
    log.add((why == app::HeavyRequests::Refusal::Stopping ? "refused " : "overdue ") + name);
  };
}

}  // namespace

TEST_CASE("Heavy is by size", "[unit][heavy]") {
  app::HeavyRequests heavy({16 * 1024, 8 * MiB, 64 * MiB});
  CHECK_FALSE(heavy.is_heavy(16 * 1024 - 1));
  CHECK(heavy.is_heavy(16 * 1024));
}

TEST_CASE("Heavy requests start only within the in-flight bound, in order", "[unit][heavy]") {
  Log log;
  app::HeavyRequests heavy({1024, 8 * MiB, 64 * MiB});
  REQUIRE(heavy.submit(5 * MiB, runs(log, "a"), refuses(log, "a")));
  REQUIRE(heavy.submit(5 * MiB, runs(log, "b"), refuses(log, "b")));
  REQUIRE(heavy.submit(1 * MiB, runs(log, "c"), refuses(log, "c")));
  REQUIRE(log.wait_for(1));
  // b would make 10 MiB in flight: it waits, and c, behind it, waits too (first come first).
  CHECK_FALSE(log.wait_for(2, std::chrono::milliseconds(300)));
  CHECK(heavy.counts().in_flight_bytes == 5 * MiB);
  CHECK(heavy.counts().queued == 2);
  log.finish_one();  // a
  // b and c fit together (6 MiB).
  REQUIRE(log.wait_for(3));
  CHECK(log.events == std::vector<std::string>{"run a", "run b", "run c"});
  log.finish_one();
  log.finish_one();
  CHECK(heavy.counts().queued == 0);
}

TEST_CASE("One heavy request runs even if it alone is over the bound", "[unit][heavy]") {
  Log log;
  app::HeavyRequests heavy({1024, 1 * MiB, 64 * MiB});
  REQUIRE(heavy.submit(3 * MiB, runs(log, "big"), refuses(log, "big")));
  REQUIRE(log.wait_for(1));
  log.finish_one();
}

TEST_CASE("Past the queue bound a heavy request is refused at once; the waiting ones at the end",
          "[unit][heavy]") {
  Log log;
  {
    app::HeavyRequests heavy({1024, 1 * MiB, 2 * MiB});
    REQUIRE(heavy.submit(1 * MiB, runs(log, "a"), refuses(log, "a")));
    REQUIRE(log.wait_for(1));  // a runs and stays unfinished: the rest wait
    CHECK(heavy.submit(1 * MiB, runs(log, "b"), refuses(log, "b")));
    CHECK(heavy.submit(1 * MiB, runs(log, "c"), refuses(log, "c")));
    CHECK_FALSE(heavy.submit(1 * MiB, runs(log, "d"), refuses(log, "d")));
    CHECK(heavy.counts().refused == 1);
    CHECK(heavy.counts().queued_bytes == 2 * MiB);
  }
  // Destroyed with b and c waiting: both refused, in order; a's reply may still come later.
  CHECK(log.events == std::vector<std::string>{"run a", "refused b", "refused c"});
  log.finish_one();  // after the object is gone: must not touch freed memory (ASan)
}

TEST_CASE("A heavy request paused past --max-heavy-wait-ms is refused, not run", "[unit][heavy]") {
  Log log;
  std::atomic<bool> behind{true};  // the projection is far behind, and stays so
  app::HeavyRequests heavy({1024, 8 * MiB, 64 * MiB, std::chrono::milliseconds(100)},
                           [&behind] { return behind.load(); });
  REQUIRE(heavy.submit(1 * MiB, runs(log, "a"), refuses(log, "a")));
  REQUIRE(heavy.submit(1 * MiB, runs(log, "b"), refuses(log, "b")));
  // Both are answered (within the wait bound, give or take the scheduler), in order, unrun.
  REQUIRE(log.wait_for(2));
  CHECK(log.events == std::vector<std::string>{"overdue a", "overdue b"});
  CHECK(heavy.counts().refused == 2);
  CHECK(heavy.counts().queued == 0);
  CHECK(heavy.counts().queued_bytes == 0);
  // Once the projection caught up, a new one runs.
  behind = false;
  REQUIRE(heavy.submit(1 * MiB, runs(log, "c"), refuses(log, "c")));
  REQUIRE(log.wait_for(3));
  CHECK(log.events.back() == "run c");
  log.finish_one();
}

TEST_CASE("A heavy request behind one that never finishes is refused after the wait bound",
          "[unit][heavy]") {
  Log log;
  app::HeavyRequests heavy({1024, 1 * MiB, 64 * MiB, std::chrono::milliseconds(100)});
  REQUIRE(heavy.submit(1 * MiB, runs(log, "a"), refuses(log, "a")));
  REQUIRE(log.wait_for(1));  // a runs and is never answered (its commit is stuck)
  REQUIRE(heavy.submit(1 * MiB, runs(log, "b"), refuses(log, "b")));
  REQUIRE(log.wait_for(2));
  CHECK(log.events == std::vector<std::string>{"run a", "overdue b"});
  CHECK(heavy.counts().in_flight_bytes == 1 * MiB);  // a still counts until it is answered
  log.finish_one();
}

TEST_CASE("The memory budget reads this process's resident memory", "[unit][memory]") {
  const std::size_t rss = app::MemoryBudget::read_resident();
  CHECK(rss > 1 * MiB);
  app::MemoryBudget tiny(1 * MiB);
  CHECK(tiny.over());
  CHECK(tiny.resident() > 1 * MiB);
  app::MemoryBudget none(0);
  CHECK_FALSE(none.over());
  app::MemoryBudget roomy(std::size_t{1} << 50);
  CHECK_FALSE(roomy.over());
}
