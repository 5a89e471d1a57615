// app::ClosedOrders: the one bookkeeping of closed orders for the live path and the replay.
// note() queues the orders a request's effects closed (filled or canceled, never open ones)
// with its journal seq; forget_projected() drops the oldest from the engine, in order, only
// once the projection holds them and only while more than `keep` are queued.
#include "app/closed_orders.hpp"

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "support/decimal.hpp"

using market::Effects;
using market::Engine;
using market::OrderId;
using testing_support::dec;

namespace {

constexpr std::int64_t kNow = 1519348326;

// An engine with a buyer and a seller of X; orders are placed by the tests.
struct Market {
  Engine engine;
  Market() {
    Effects fx;
    REQUIRE_FALSE(engine.create_account("1", dec("100000"), fx).has_value());
    REQUIRE_FALSE(engine.create_account("2", dec("0"), fx).has_value());
    REQUIRE_FALSE(engine.add_shares("X", "2", dec("1000"), fx).has_value());
  }
  // Places an order; its effects in `fx`.
  OrderId place(const std::string& account, const std::string& amount, const std::string& limit,
                Effects& fx) {
    Engine::Placed p = engine.place_order(account, "X", dec(amount), dec(limit), kNow, fx);
    REQUIRE_FALSE(p.reject.has_value());
    return p.id;
  }
  // A resting sell filled at once by a buy: the effects close both.
  Effects trade(OrderId& sell, OrderId& buy) {
    Effects fx;
    sell = place("2", "-1", "1", fx);
    buy = place("1", "1", "1", fx);
    return fx;
  }
};

}  // namespace

TEST_CASE("note() queues the orders the effects closed, not the open ones", "[unit][closed]") {
  Market m;
  app::ClosedOrders closed(0);
  Effects open_fx;
  OrderId resting = m.place("2", "-5", "10", open_fx);
  closed.note(open_fx, 1);
  CHECK(closed.size() == 0);
  closed.note(Effects(), 2);
  CHECK(closed.size() == 0);

  Effects cancel_fx;
  market::OrderStatus status;
  REQUIRE_FALSE(m.engine.cancel("2", resting, kNow, cancel_fx, status).has_value());
  closed.note(cancel_fx, 3);
  CHECK(closed.size() == 1);

  OrderId sell = 0, buy = 0;
  closed.note(m.trade(sell, buy), 4);
  CHECK(closed.size() == 3);
  closed.forget_projected(m.engine, 4);
  CHECK(closed.size() == 0);
  CHECK_FALSE(m.engine.holds_order(resting));
  CHECK_FALSE(m.engine.holds_order(sell));
  CHECK_FALSE(m.engine.holds_order(buy));
  CHECK(m.engine.was_assigned(buy));
}

TEST_CASE("forget_projected() drops in order, only what is projected, keeping `keep`",
          "[unit][closed]") {
  Market m;
  app::ClosedOrders closed(2);
  std::vector<OrderId> ids;
  for (std::int64_t seq = 10; seq < 15; ++seq) {
    OrderId sell = 0, buy = 0;
    closed.note(m.trade(sell, buy), seq);
    ids.push_back(sell);
    ids.push_back(buy);
  }
  REQUIRE(closed.size() == 10);
  REQUIRE(m.engine.order_count() == 10);

  closed.forget_projected(m.engine, 9);  // nothing projected yet
  CHECK(closed.size() == 10);
  CHECK(m.engine.order_count() == 10);

  closed.forget_projected(m.engine, 11);  // seqs 10 and 11: four orders, the oldest first
  CHECK(closed.size() == 6);
  for (std::size_t i = 0; i < ids.size(); ++i) CHECK(m.engine.holds_order(ids[i]) == (i >= 4));

  closed.forget_projected(m.engine, 100);  // everything projected: `keep` stay, the newest
  CHECK(closed.size() == 2);
  CHECK(m.engine.order_count() == 2);
  CHECK(m.engine.holds_order(ids[8]));
  CHECK(m.engine.holds_order(ids[9]));

  closed.forget_projected(m.engine, 100);  // idempotent
  CHECK(closed.size() == 2);
}

TEST_CASE("clear() forgets the queue, not the engine's orders", "[unit][closed]") {
  Market m;
  app::ClosedOrders closed(0);
  OrderId sell = 0, buy = 0;
  closed.note(m.trade(sell, buy), 1);
  closed.clear();
  CHECK(closed.size() == 0);
  closed.forget_projected(m.engine, 1);
  CHECK(m.engine.holds_order(sell));
  CHECK(m.engine.holds_order(buy));
}
