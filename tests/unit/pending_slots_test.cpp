// PendingSlots: the trading port's slots, who gives way when they run out, the pending phase's
// deadline, and its use from many threads at once.
#include "net/pending_slots.hpp"

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

using net::PendingSlots;
using Slot = PendingSlots::Slot;
using std::chrono::milliseconds;

namespace {

constexpr milliseconds kLogon{10000};

// Connections that record their closing (by name) and keep their slot until told to go.
struct Fake {
  std::shared_ptr<PendingSlots> slots;
  std::vector<std::string> closed;
  std::vector<Slot> held;

  Fake(std::size_t max_open, std::size_t max_pending)
      : slots(std::make_shared<PendingSlots>(max_open, max_pending, kLogon)) {}

  // Its index in `held`, or -1 when refused.
  int open(const std::string& name) {
    Slot slot = slots->admit();
    if (!slot) return -1;
    slot.on_close([this, name] { closed.push_back(name); });
    held.push_back(std::move(slot));
    return static_cast<int>(held.size()) - 1;
  }
};

using Names = std::vector<std::string>;

}  // namespace

TEST_CASE("below both caps nobody gives way", "[unit][slots]") {
  Fake f(3, 3);
  CHECK(f.open("a") == 0);
  CHECK(f.open("b") == 1);
  CHECK(f.open("c") == 2);
  CHECK(f.closed.empty());
  CHECK(f.slots->open() == 3);
  CHECK(f.slots->pending() == 3);
  CHECK(f.slots->evicted() == 0);
}

TEST_CASE("at --max-connections the oldest pending connection gives way; authenticated never",
          "[unit][slots]") {
  Fake f(3, 100);
  const int a = f.open("a");
  f.open("b");
  f.open("c");
  REQUIRE(f.held[a].authenticated());  // a is served from now on
  CHECK(f.open("d") >= 0);
  CHECK(f.closed == Names{"b"});  // not a, though it is older
  CHECK(f.open("e") >= 0);
  CHECK(f.closed == Names{"b", "c"});
  CHECK(f.slots->open() == 3);
  CHECK(f.slots->pending() == 2);
  CHECK(f.slots->evicted() == 2);
}

TEST_CASE("at --max-pending-connections the oldest pending one gives way, with slots to spare",
          "[unit][slots]") {
  Fake f(100, 2);
  REQUIRE(f.held[f.open("a")].authenticated());
  f.open("b");
  f.open("c");
  CHECK(f.closed.empty());
  f.open("d");
  CHECK(f.closed == Names{"b"});
  CHECK(f.slots->pending() == 2);
  CHECK(f.slots->open() == 3);
}

TEST_CASE("when every open connection is authenticated the newcomer is refused; a release frees",
          "[unit][slots]") {
  Fake f(2, 2);
  REQUIRE(f.held[f.open("a")].authenticated());
  REQUIRE(f.held[f.open("b")].authenticated());
  CHECK(f.open("c") == -1);
  CHECK(f.closed.empty());
  f.held[0].release();
  CHECK_FALSE(static_cast<bool>(f.held[0]));
  CHECK(f.slots->open() == 1);
  CHECK(f.open("d") >= 0);
  CHECK(f.closed.empty());
  // A pending one that closes by itself frees its slot too.
  f.held.back().release();
  CHECK(f.slots->open() == 1);
  CHECK(f.slots->pending() == 0);
}

TEST_CASE("an evicted connection cannot authenticate, and its release changes no count",
          "[unit][slots]") {
  Fake f(1, 1);
  const int a = f.open("a");
  const int b = f.open("b");
  REQUIRE(f.closed == Names{"a"});
  CHECK_FALSE(f.held[a].authenticated());
  CHECK_FALSE(f.held[a].authenticated());  // asked again: still not
  f.held[a].release();
  CHECK(f.slots->open() == 1);
  CHECK(f.held[b].authenticated());
  CHECK(f.slots->pending() == 0);
}

TEST_CASE("a slot evicted before it had a close callback closes as soon as it gets one",
          "[unit][slots]") {
  auto slots = std::make_shared<PendingSlots>(1, 1, kLogon);
  Slot first = slots->admit();
  Slot second = slots->admit();  // evicts first, which has no callback yet
  REQUIRE(second);
  bool closed = false;
  first.on_close([&] { closed = true; });
  CHECK(closed);
  CHECK_FALSE(first.authenticated());
}

TEST_CASE("a moved slot is released once, by its last holder", "[unit][slots]") {
  auto slots = std::make_shared<PendingSlots>(2, 2, kLogon);
  {
    Slot a = slots->admit();
    Slot b(std::move(a));
    CHECK_FALSE(static_cast<bool>(a));
    Slot c = slots->admit();
    c = std::move(b);  // c's own slot is released here
    CHECK(slots->open() == 1);
  }
  CHECK(slots->open() == 0);
}

TEST_CASE("the pending phase's deadline: from the accept while pending, none once authenticated",
          "[unit][slots]") {
  auto slots = std::make_shared<PendingSlots>(2, 2, milliseconds(500));
  const auto before = PendingSlots::Clock::now();
  Slot slot = slots->admit();
  const auto after = PendingSlots::Clock::now();
  const auto far = after + std::chrono::hours(1);
  const auto clamped = slot.deadline(far);
  CHECK(clamped >= before + milliseconds(500));
  CHECK(clamped <= after + milliseconds(500));
  CHECK(slot.deadline(before) == before);  // an earlier deadline stays
  REQUIRE(slot.authenticated());
  CHECK(slot.deadline(far) == far);
  CHECK(Slot().deadline(far) == far);  // no slot: nothing clamped
  CHECK(Slot().authenticated());
}

TEST_CASE("close callbacks run outside the lock", "[unit][slots]") {
  auto slots = std::make_shared<PendingSlots>(1, 1, kLogon);
  Slot first = slots->admit();
  bool could_count = false;
  first.on_close([&] {
    // Another thread takes the lock: inside it this would wait until admit() returned.
    auto counted = std::async(std::launch::async, [&] { return slots->open(); });
    could_count = counted.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  });
  Slot second = slots->admit();
  CHECK(could_count);
}

TEST_CASE("release waits for an eviction's callback running on another thread", "[unit][slots]") {
  auto slots = std::make_shared<PendingSlots>(1, 1, kLogon);
  Slot victim = slots->admit();
  std::atomic<bool> entered{false}, go_on{false}, callback_done{false};
  victim.on_close([&] {
    entered = true;
    for (int i = 0; i < 500 && !go_on; ++i) std::this_thread::sleep_for(milliseconds(10));
    callback_done = true;
  });
  std::thread newcomer([&] { Slot s = slots->admit(); });
  while (!entered) std::this_thread::yield();
  std::atomic<bool> released{false};
  bool done_when_released = false;
  std::thread owner([&] {
    victim.release();
    done_when_released = callback_done;
    released = true;
  });
  std::this_thread::sleep_for(milliseconds(50));
  CHECK_FALSE(released);  // still waiting for the callback
  go_on = true;
  owner.join();
  newcomer.join();
  CHECK(done_when_released);
}

TEST_CASE("many threads admitting, authenticating and releasing at once keep every count right",
          "[unit][slots]") {
  constexpr std::size_t kMaxOpen = 16;
  // Each thread alone holds more pending slots than the pending cap: evictions are certain.
  auto slots = std::make_shared<PendingSlots>(kMaxOpen, 4, kLogon);
  std::atomic<int> callbacks{0}, refused{0}, over_cap{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::vector<Slot> mine;
      for (int i = 0; i < 2000; ++i) {
        Slot slot = slots->admit();
        if (slots->open() > kMaxOpen) ++over_cap;
        if (!slot) {
          ++refused;
        } else {
          slot.on_close([&] { ++callbacks; });
          if ((i + t) % 3 == 0) slot.authenticated();
          mine.push_back(std::move(slot));
        }
        if (mine.size() > 12) mine.erase(mine.begin());  // the oldest of this thread closes
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(over_cap == 0);
  CHECK(slots->open() == 0);
  CHECK(slots->pending() == 0);
  CHECK(slots->evicted() > 0);
  CHECK(callbacks == static_cast<int>(slots->evicted()));
}
