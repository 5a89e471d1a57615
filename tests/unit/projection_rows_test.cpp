// store::ProjectionRows and store::DeferredEffects, the projection's merge on its own:
//   - the last row per key (account, position, order) wins; symbols are a set;
//   - executions are appended in the order the requests produced them;
//   - a later batch, merged (a replay's chunk) or deferred (a commit's effects), supersedes
//     what was merged before, and its executions follow;
//   - rows are counted as the requests produced them, before merging (the projection lag's
//     unit), by DeferredEffects and ProjectionRows alike;
//   - an order's merged row is `revised` if any of its rows was (a later fill does not undo a
//     <replace>), whichever way the rows are merged.
#include "store/projection_rows.hpp"

#include <optional>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "store/deferred_effects.hpp"
#include "support/decimal.hpp"

using market::Effects;
using testing_support::dec;

namespace {

market::AccountRow account(const std::string& id, const std::string& balance) {
  return {id, dec(balance), dec("100")};
}

market::PositionRow position(const std::string& account, const std::string& symbol,
                             const std::string& amount) {
  return {account, symbol, dec(amount), dec("0")};
}

market::OrderRow order(market::OrderId id, const std::string& open) {
  return {id,         "1",          "X", dec("10"),    dec("5"), dec(open),
          1519348326, std::nullopt, id,  std::nullopt, false};
}

market::ExecutionRow execution(std::int64_t id) {
  return {id, 1, 2, dec("1"), dec("5"), 1519348326};
}

// What the tests below merge first: accounts 1 (100) and 2 (3), order 1 open 10, execution 1.
Effects earlier_effects() {
  Effects fx;
  fx.accounts = {account("1", "100"), account("2", "3")};
  fx.orders = {order(1, "10")};
  fx.executions = {execution(1)};
  return fx;
}

std::vector<std::int64_t> execution_ids(const store::ProjectionRows& rows) {
  std::vector<std::int64_t> ids;
  for (const auto& e : rows.executions) ids.push_back(e.id);
  return ids;
}

}  // namespace

TEST_CASE("Merged effects keep the last row per key and every execution in order",
          "[unit][projection]") {
  Effects first;
  first.symbols = {"X"};
  first.accounts = {account("1", "100")};
  first.positions = {position("1", "X", "5"), position("1", "Y", "7")};
  first.orders = {order(1, "10")};
  first.executions = {execution(1), execution(2)};
  Effects second;
  second.symbols = {"X", "Y"};
  second.accounts = {account("1", "90"), account("2", "3")};
  second.positions = {position("1", "X", "4")};
  second.orders = {order(1, "6"), order(2, "10")};
  second.executions = {execution(3)};

  store::ProjectionRows rows;
  rows.merge(std::move(first));
  rows.merge(std::move(second));

  CHECK(rows.symbols == std::set<std::string>{"X", "Y"});
  REQUIRE(rows.accounts.size() == 2);
  CHECK(rows.accounts.at("1").balance == dec("90"));
  CHECK(rows.accounts.at("2").balance == dec("3"));
  REQUIRE(rows.positions.size() == 2);
  CHECK(rows.positions.at({"1", "X"}).amount == dec("4"));
  CHECK(rows.positions.at({"1", "Y"}).amount == dec("7"));  // untouched since: kept
  REQUIRE(rows.orders.size() == 2);
  CHECK(rows.orders.at(1).open == dec("6"));
  CHECK(rows.orders.at(2).open == dec("10"));
  CHECK(execution_ids(rows) == std::vector<std::int64_t>{1, 2, 3});
  CHECK(rows.rows == 15);  // as produced (eleven remain merged)
}

TEST_CASE("A later batch's merged rows supersede ours and its executions follow",
          "[unit][projection]") {
  store::ProjectionRows earlier;
  earlier.merge(earlier_effects());
  Effects fx;
  fx.accounts = {account("1", "50"), account("1", "40")};
  fx.orders = {order(1, "0")};
  fx.executions = {execution(2)};
  store::ProjectionRows later;
  later.merge(std::move(fx));

  // Into nothing, the first batch is taken whole.
  store::ProjectionRows rows;
  rows.merge(std::move(earlier));
  CHECK(rows.rows == 4);
  CHECK(rows.accounts.at("1").balance == dec("100"));
  CHECK(earlier.empty());  // NOLINT(bugprone-use-after-move): merging takes it
  CHECK(earlier.rows == 0);

  rows.merge(std::move(later));
  CHECK(rows.accounts.at("1").balance == dec("40"));
  CHECK(rows.accounts.at("2").balance == dec("3"));
  CHECK(rows.orders.at(1).open == dec("0"));
  CHECK(execution_ids(rows) == std::vector<std::int64_t>{1, 2});
  CHECK(rows.rows == 8);
  CHECK(later.empty());  // NOLINT(bugprone-use-after-move)
}

TEST_CASE("Deferred effects count rows as produced and merge in the order added",
          "[unit][projection]") {
  store::DeferredEffects later;
  Effects a;
  a.accounts = {account("1", "80")};
  a.executions = {execution(4)};
  Effects b;
  b.accounts = {account("1", "70")};
  b.orders = {order(1, "0")};
  b.executions = {execution(5)};
  later.add(std::move(a));
  later.add(std::move(b));
  CHECK(later.rows() == 5);  // account "1" twice: merging would leave four rows

  store::ProjectionRows rows;
  rows.merge(earlier_effects());

  rows.merge(std::move(later));
  CHECK(rows.accounts.at("1").balance == dec("70"));  // the later batch's last row
  CHECK(rows.accounts.at("2").balance == dec("3"));
  CHECK(rows.orders.at(1).open == dec("0"));
  CHECK(execution_ids(rows) == std::vector<std::int64_t>{1, 4, 5});
  CHECK(later.empty());  // taken
  CHECK(later.rows() == 0);
  CHECK(rows.rows == 4 + 5);
}

TEST_CASE("Moving deferred effects moves their row count", "[unit][projection]") {
  store::DeferredEffects from;
  Effects fx;
  fx.symbols = {"X"};
  fx.accounts = {account("1", "1")};
  from.add(std::move(fx));
  store::DeferredEffects to = std::move(from);
  CHECK(to.rows() == 2);
  CHECK_FALSE(to.empty());
  CHECK(from.rows() == 0);  // NOLINT(bugprone-use-after-move): a moved-from one is empty
  CHECK(from.empty());
}

TEST_CASE("An order stays revised when a later row of it is not", "[unit][projection]") {
  // Order 1 is replaced (revised: amount 8, limit 6, a new priority), then fills (its row
  // not revised, the replace's values in it); order 2 only fills, order 3 is revised last.
  const auto revised = [](market::OrderRow row) {
    row.revised = true;
    return row;
  };
  market::OrderRow replaced = order(1, "8");
  replaced.amount = dec("8");
  replaced.limit = dec("6");
  replaced.priority = 40;
  market::OrderRow filled = replaced;
  filled.open = dec("5");
  const auto effects = [&](std::vector<market::OrderRow> orders) {
    Effects fx;
    fx.orders = std::move(orders);
    return fx;
  };
  const auto check = [&](const store::ProjectionRows& rows) {
    REQUIRE(rows.orders.size() == 3);
    const market::OrderRow& one = rows.orders.at(1);
    CHECK(one.revised);
    CHECK(one.open == dec("5"));  // the last row's values
    CHECK(one.limit == dec("6"));
    CHECK(one.priority == 40);
    CHECK(!rows.orders.at(2).revised);
    CHECK(rows.orders.at(3).revised);
  };
  SECTION("one request's rows") {
    store::ProjectionRows rows;
    rows.merge(effects({order(2, "10"), revised(replaced), order(3, "10"), filled, order(2, "9"),
                        revised(order(3, "10"))}));
    check(rows);
  }
  SECTION("requests one after another") {
    store::ProjectionRows rows;
    rows.merge(effects({order(2, "10"), revised(replaced), order(3, "10")}));
    rows.merge(effects({filled, order(2, "9"), revised(order(3, "10"))}));
    check(rows);
  }
  SECTION("deferred effects") {
    store::DeferredEffects later;
    later.add(effects({order(2, "10"), revised(replaced), order(3, "10")}));
    later.add(effects({filled, order(2, "9"), revised(order(3, "10"))}));
    store::ProjectionRows rows;
    rows.merge(std::move(later));
    check(rows);
  }
  SECTION("merged batches (a replay's chunks, a write's gathering)") {
    store::ProjectionRows earlier, later;
    earlier.merge(effects({order(2, "10"), revised(replaced), order(3, "10")}));
    later.merge(effects({filled, order(2, "9"), revised(order(3, "10"))}));
    earlier.merge(std::move(later));
    check(earlier);
  }
}
