#pragma once
// What every store::Store (store/ports.hpp) must do, checked the same way on PostgreSQL
// (e2e/store_contract_test.cpp) and on the in-memory fake the unit tests use
// (unit/memory_store_test.cpp): the fake is only worth its tests while it behaves as the real
// store does.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "leadership/fencing.hpp"
#include "market/engine.hpp"
#include "store/ports.hpp"

namespace test {

inline store::JournalEntry contract_entry(std::int64_t seq, std::string refused = "") {
  return store::JournalEntry{
      seq, 1700000000 + seq, 1,
      "<transactions id=\"1001\"><query id=\"" + std::to_string(seq) + "\"/></transactions>",
      std::move(refused)};
}

inline store::ProjectionRows contract_rows(market::OrderId order, std::int64_t open) {
  using market::Decimal;
  market::Effects fx;
  fx.symbols.push_back("X");
  fx.accounts.push_back({"1001", Decimal::from_int(970), Decimal::from_int(1000)});
  fx.positions.push_back({"1001", "X", Decimal::from_int(7), Decimal::from_int(7)});
  fx.orders.push_back({order, "1001", "X", Decimal::from_int(10), Decimal::from_int(3),
                       Decimal::from_int(open), 1700000000, std::nullopt, order, std::nullopt,
                       false});
  store::ProjectionRows rows;
  rows.merge(std::move(fx));
  return rows;
}

// `epoch`: the writer epoch in force; `bump`: another writer takes over, returning its epoch.
inline void check_store_contract(store::Store& s, std::int64_t epoch,
                                 const std::function<std::int64_t()>& bump) {
  auto writer = s.journal_writer({epoch});
  writer->write({contract_entry(1), contract_entry(2, "3,17")}, 1);
  writer->write({contract_entry(3)}, 2);

  auto reader = s.state_reader();
  const auto all = reader->read_journal(0, 10);
  REQUIRE(all.size() == 3);
  CHECK(all[1].seq == 2);
  CHECK(all[1].at == contract_entry(2).at);
  CHECK(all[1].first_order_id == 1);
  CHECK(all[1].request == contract_entry(2).request);
  CHECK(all[1].refused == "3,17");
  const auto one = reader->read_journal(1, 1);
  REQUIRE(one.size() == 1);
  CHECK(one[0].seq == 2);

  auto follower = s.journal_follower();
  auto tail = follower->follow(1, 10);
  CHECK(tail.last_seq == 3);
  CHECK(tail.projected_seq == 0);
  REQUIRE(tail.entries.size() == 2);
  CHECK(tail.entries[0].seq == 2);
  CHECK(follower->usable());

  // The projection: written with its position, loaded back, and a write already reached skipped.
  auto projection = s.projection_writer({epoch});
  projection->write(contract_rows(1, 10), 2, nullptr);
  {
    market::Engine engine;
    CHECK(s.state_reader()->load(engine) == 2);
    CHECK(engine.order_count() == 1);
    CHECK(engine.next_order_id() == 2);
  }
  projection->write(contract_rows(2, 10), 2, nullptr);  // seq 2 is in: skipped
  auto archive = s.archive_reader();
  const auto found = archive->find_orders("1001", {1, 2, 99});
  REQUIRE(found.size() == 1);
  CHECK(found.at(1).open == market::Decimal::from_int(10));
  CHECK(found.at(1).fills.empty());
  CHECK(archive->find_orders("2002", {1}).empty());

  // Trimming deletes projected entries only.
  CHECK(projection->trim_journal(1) == 1);
  CHECK(s.state_reader()->read_journal(0, 10).front().seq == 2);

  // Fencing: once another writer's epoch is in force, nothing of ours is stored.
  const std::int64_t next = bump();
  CHECK_THROWS_AS(writer->write({contract_entry(4)}, 3), leadership::Fenced);
  CHECK_THROWS_AS(projection->write(contract_rows(3, 10), 3, nullptr), leadership::Fenced);
  CHECK(s.state_reader()->read_journal(0, 10).size() == 2);
  {
    market::Engine engine;
    CHECK(s.state_reader()->load(engine) == 2);
  }
  // The new writer's token works.
  s.journal_writer({next})->write({contract_entry(4)}, 1);
  CHECK(s.state_reader()->read_journal(0, 10).back().seq == 4);
}

// The order types of PROTOCOL.md sections 4.5-4.8 as the store keeps them (OrderRow's
// priority, stop and revised, a market order's zero limit), on a store with an empty
// projection. `read_orders`: the stored rows of some ids, in id order, read as load() reads the
// open orders it hands the engine (store::Database::order_rows, test::MemoryDatabase::order_rows).
using ReadOrders =
    std::function<std::vector<market::OrderRow>(const std::vector<market::OrderId>&)>;

inline market::OrderRow contract_order(market::OrderId id, const std::string& account,
                                       std::int64_t amount, std::int64_t limit, std::int64_t open,
                                       std::int64_t priority) {
  using market::Decimal;
  market::OrderRow row;
  row.id = id;
  row.account = account;
  row.symbol = "X";
  row.amount = Decimal::from_int(amount);
  row.limit = Decimal::from_int(limit);
  row.open = Decimal::from_int(open);
  row.created_at = 1700000000;
  row.priority = priority;
  return row;
}

// Accounts 1001 (buys) and 1002 (sells) with cash and shares of X.
inline market::Effects contract_accounts() {
  using market::Decimal;
  market::Effects fx;
  fx.symbols.push_back("X");
  fx.accounts.push_back({"1001", Decimal::from_int(1000), Decimal::from_int(1000)});
  fx.accounts.push_back({"1002", Decimal::from_int(1000), Decimal::from_int(1000)});
  fx.positions.push_back({"1002", "X", Decimal::from_int(100), Decimal::from_int(100)});
  return fx;
}

inline void check_order_types_contract(store::Store& s, std::int64_t epoch,
                                       const ReadOrders& read_orders) {
  using market::Decimal;
  auto projection = s.projection_writer({epoch});
  // Seq 1: the orders as placed.
  {
    market::Effects fx = contract_accounts();
    fx.orders.push_back(contract_order(1, "1001", 10, 3, 10, 1));         // replaced: more, dearer
    fx.orders.push_back(contract_order(2, "1001", 10, 3, 10, 2));         // replaced: fewer
    fx.orders.push_back(contract_order(3, "1002", -10, 5, 10, 3));        // never revised
    market::OrderRow market_ioc = contract_order(4, "1001", 5, 0, 3, 4);  // market: no limit
    market_ioc.canceled_at = 1700000001;  // 2 executed, the other 3 canceled at once
    fx.orders.push_back(market_ioc);
    market::OrderRow waiting = contract_order(5, "1001", 6, 4, 6, 5);  // a stop that waits
    waiting.stop = Decimal::from_int(9);
    fx.orders.push_back(waiting);
    market::OrderRow sell_stop = contract_order(6, "1002", -8, 6, 8, 6);  // triggered at seq 2
    sell_stop.stop = Decimal::from_int(3);
    fx.orders.push_back(sell_stop);
    store::ProjectionRows rows;
    rows.merge(std::move(fx));
    projection->write(rows, 1, nullptr);
  }
  // Seq 2 and 3, merged into one write: seq 2 revises orders stored before (a <replace> of 1
  // with a remainder above its old amount, one of 2 with an amount below its old remainder,
  // the trigger of 6), seq 3 fills 1 again with a new order 7 (its row there not revised:
  // the write must still store what seq 2 revised).
  {
    market::Effects replace;
    market::OrderRow one = contract_order(1, "1001", 15, 4, 15, 7);
    one.revised = true;
    market::OrderRow two = contract_order(2, "1001", 4, 3, 4, 2);
    two.revised = true;
    market::OrderRow six = contract_order(6, "1002", -8, 6, 8, 8);
    six.revised = true;
    replace.orders = {one, two, six};
    market::Effects fill;
    fill.orders.push_back(contract_order(1, "1001", 15, 4, 12, 7));
    fill.orders.push_back(contract_order(7, "1002", -3, 4, 0, 9));
    fill.executions.push_back({1, 1, 7, Decimal::from_int(3), Decimal::from_int(4), 1700000002});
    store::ProjectionRows first, second;
    first.merge(std::move(replace));
    second.merge(std::move(fill));
    first.merge(std::move(second));
    REQUIRE(first.orders.at(1).revised);
    projection->write(first, 3, nullptr);
  }

  const auto rows = read_orders({1, 2, 3, 4, 5, 6, 7, 99});
  REQUIRE(rows.size() == 7);
  const auto row = [&](market::OrderId id) { return rows.at(static_cast<std::size_t>(id - 1)); };
  for (const auto& r : rows) {
    INFO("order " << r.id);
    CHECK(!r.revised);
    CHECK(r.created_at == 1700000000);
  }
  // A <replace>'s new amount, limit, remainder and priority, with a later fill's remainder.
  CHECK(row(1).amount == Decimal::from_int(15));
  CHECK(row(1).limit == Decimal::from_int(4));
  CHECK(row(1).open == Decimal::from_int(12));
  CHECK(row(1).priority == 7);
  CHECK(!row(1).stop);
  CHECK(row(2).amount == Decimal::from_int(4));
  CHECK(row(2).open == Decimal::from_int(4));
  CHECK(row(2).priority == 2);
  CHECK(row(3).amount == Decimal::from_int(-10));
  CHECK(row(3).limit == Decimal::from_int(5));
  CHECK(row(3).priority == 3);
  // A market order: no limit, stored and read back as zero.
  CHECK(row(4).limit.is_zero());
  CHECK(row(4).open == Decimal::from_int(3));
  CHECK(row(4).canceled_at == 1700000001);
  // A stop that waits keeps its stop; a triggered one has none, and its trigger's priority.
  REQUIRE(row(5).stop);
  CHECK(*row(5).stop == Decimal::from_int(9));
  CHECK(row(5).open == Decimal::from_int(6));
  CHECK(row(5).limit == Decimal::from_int(4));
  CHECK(!row(6).stop);
  CHECK(row(6).priority == 8);
  CHECK(row(6).open == Decimal::from_int(8));
  CHECK(row(7).priority == 9);

  // Loaded into the engine: the open orders (1, 2, 3, 5, 6) with their revised values. What
  // the engine does with a priority or a stop: check_loaded_priority_and_stops.
  market::Engine engine;
  CHECK(s.state_reader()->load(engine) == 3);
  CHECK(engine.next_order_id() == 8);
  CHECK(engine.holds_order(5));
  CHECK(!engine.holds_order(4));
  const market::Order* one = engine.find_own_order("1001", 1);
  REQUIRE(one);
  CHECK(one->amount == Decimal::from_int(15));
  CHECK(one->limit == Decimal::from_int(4));
  CHECK(one->open == Decimal::from_int(12));
  const market::Order* two = engine.find_own_order("1001", 2);
  REQUIRE(two);
  CHECK(two->amount == Decimal::from_int(4));
  CHECK(two->open == Decimal::from_int(4));
}

// What a load gives the engine of priorities and stops, seen in how it matches: a buy whose
// <replace> lost its place rests behind a later one at the same limit, and a waiting stop is
// not on the book.
inline void check_loaded_priority_and_stops(store::Store& s, std::int64_t epoch) {
  using market::Decimal;
  market::Effects fx = contract_accounts();
  fx.orders.push_back(contract_order(1, "1001", 10, 3, 10, 20));  // replaced: lost its place
  fx.orders.push_back(contract_order(2, "1001", 10, 3, 10, 10));
  market::OrderRow waiting = contract_order(3, "1001", 10, 4, 10, 11);  // would be the best bid
  waiting.stop = Decimal::from_int(9);
  fx.orders.push_back(waiting);
  // The live engine had given priorities up to 40 (to orders since closed): the count goes on
  // from there after a load, not from the open orders' largest.
  fx.next_priority = 41;
  store::ProjectionRows rows;
  rows.merge(std::move(fx));
  s.projection_writer({epoch})->write(rows, 1, nullptr);

  market::Engine engine;
  REQUIRE(s.state_reader()->load(engine) == 1);
  CHECK(engine.next_priority() == 41);
  market::Effects sold;
  const auto placed = engine.place_order("1002", "X", Decimal::from_int(-5), Decimal::from_int(3),
                                         1700000001, sold);
  REQUIRE(!placed.reject);
  REQUIRE(sold.executions.size() == 1);
  CHECK(sold.executions[0].buy_order == 2);
  CHECK(sold.executions[0].price == Decimal::from_int(3));
  CHECK(sold.next_priority == 42);
}

}  // namespace test
