#pragma once
// What every store::Store (store/ports.hpp) must do, checked the same way on PostgreSQL
// (e2e/store_contract_test.cpp) and on the in-memory fake the unit tests use
// (unit/memory_store_test.cpp): the fake is only worth its tests while it behaves as the real
// store does.
#include <functional>
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
                       Decimal::from_int(open), 1700000000, std::nullopt});
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

}  // namespace test
