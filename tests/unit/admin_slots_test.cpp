// AdminSlots: who gives way when the admin port's cap is reached.
#include "net/admin_slots.hpp"

#include <string>
#include <vector>

#include <catch2/catch.hpp>

using net::AdminSlots;

namespace {

// Connections that record their closing and release their slot, as HttpConnection does.
struct Fake {
  AdminSlots& slots;
  std::vector<std::string>& closed;
  std::vector<AdminSlots::Slot> held;

  std::size_t open(const std::string& name) {
    held.push_back(slots.take([this, name, i = held.size()] {
      closed.push_back(name);
      slots.release(held[i]);
    }));
    return held.size() - 1;
  }
};

}  // namespace

TEST_CASE("below the cap nobody gives way", "[unit][admin]") {
  AdminSlots slots(2);
  std::vector<std::string> closed;
  Fake f{slots, closed, {}};
  REQUIRE(slots.make_room());
  f.open("a");
  REQUIRE(slots.make_room());
  f.open("b");
  CHECK(closed.empty());
  CHECK(slots.open() == 2);
}

TEST_CASE("at the cap the oldest connection still waiting for its request gives way",
          "[unit][admin]") {
  AdminSlots slots(3);
  std::vector<std::string> closed;
  Fake f{slots, closed, {}};
  f.open("a");
  auto b = f.open("b");
  f.open("c");
  CHECK(slots.make_room());
  CHECK(closed == std::vector<std::string>{"a"});
  f.open("d");
  // b has its request and is being answered: c, the oldest still waiting, goes instead.
  slots.answering(f.held[b]);
  CHECK(slots.make_room());
  CHECK(closed == std::vector<std::string>{"a", "c"});
  CHECK(slots.open() == 2);
}

TEST_CASE("when every slot is answering, the newcomer is refused", "[unit][admin]") {
  AdminSlots slots(2);
  std::vector<std::string> closed;
  Fake f{slots, closed, {}};
  slots.answering(f.held[f.open("a")]);
  slots.answering(f.held[f.open("b")]);
  CHECK_FALSE(slots.make_room());
  CHECK(closed.empty());
  // An answered connection that closes frees its slot.
  slots.release(f.held[0]);
  CHECK(slots.make_room());
}
