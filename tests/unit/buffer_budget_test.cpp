// net::BufferBudget, the byte count every connection charges (--max-buffered-bytes): what
// fits is taken, what does not is refused without being taken, forced charges may go past the
// limit, and concurrent charges and releases from many threads balance out exactly.
#include "net/buffer_budget.hpp"

#include <atomic>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

TEST_CASE("try_charge takes what fits and nothing else", "[budget]") {
  net::BufferBudget budget(100);
  CHECK(budget.try_charge(60));
  CHECK_FALSE(budget.try_charge(41));  // 101 would be over
  CHECK(budget.used() == 60);          // a refusal takes nothing
  CHECK(budget.try_charge(40));        // exactly the limit fits
  CHECK(budget.exhausted());
  CHECK_FALSE(budget.try_charge(1));
  CHECK(budget.try_charge(0));
  budget.release(100);
  CHECK(budget.used() == 0);
  CHECK_FALSE(budget.exhausted());
}

TEST_CASE("charge goes past the limit; try_charge then refuses until enough is released",
          "[budget]") {
  net::BufferBudget budget(100);
  budget.charge(150);  // a reply that must be kept
  CHECK(budget.used() == 150);
  CHECK(budget.exhausted());
  CHECK_FALSE(budget.try_charge(1));
  // No overflow whatever the sizes: a huge request is refused, not wrapped round.
  CHECK_FALSE(budget.try_charge(static_cast<std::size_t>(-1)));
  budget.release(100);
  CHECK(budget.try_charge(50));
  CHECK(budget.used() == 100);
  budget.release(100);
  CHECK(budget.used() == 0);
}

TEST_CASE("refusals are counted", "[budget]") {
  net::BufferBudget budget(1);
  CHECK(budget.refusals() == 0);
  budget.count_refusal();
  budget.count_refusal();
  CHECK(budget.refusals() == 2);
  CHECK(budget.limit() == 1);
}

TEST_CASE("try_charge from many threads at once never takes the total past the limit", "[budget]") {
  net::BufferBudget budget(1000);
  std::atomic<bool> over{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&budget, &over, t] {
      for (int i = 0; i < 20000; ++i) {
        const std::size_t n = static_cast<std::size_t>((i + t) % 300 + 1);
        if (!budget.try_charge(n)) continue;
        if (budget.used() > budget.limit()) over = true;
        budget.release(n);
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK_FALSE(over);
  CHECK(budget.used() == 0);
}

TEST_CASE("charges and releases of both kinds from many threads balance out exactly", "[budget]") {
  net::BufferBudget budget(1000);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&budget, t] {
      for (int i = 0; i < 20000; ++i) {
        const std::size_t n = static_cast<std::size_t>((i + t) % 50 + 1);
        budget.charge(n);
        const bool taken = budget.try_charge(n);
        budget.release(n);
        if (taken) budget.release(n);
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(budget.used() == 0);
}
