// store::plan_projection, what a projection write sends and in which order, without a database:
//   - orders after the largest stored id are copied, in id order; the others are changed rows,
//     in id order, as are the accounts and positions (key order) and the symbols (set order);
//   - executions after the largest stored id are copied; each order's new executions are its
//     fills (none when every execution is stored already);
//   - COPYs of at most rows_per_copy rows, statements of at most rows_per_statement rows of each
//     table, interleaved after each COPY so that the changed rows keep up with the copied ones,
//     the rest after the last COPY: step for step what a model of the write before the plan
//     (the loops Database::project ran itself) sends, for batches of many shapes;
//   - a copied row is 1 unit of work, a changed row changed_row_cost;
//   - stored orders marked revised are written by a statement of their own just before the
//     statement of changed rows that holds them (a revised row counts changed_row_cost once
//     more), new ones only copied; without any, the plan is what it was before they existed.
// That the executor sends the plan as planned is checked end to end by the tests that read the
// projected tables back (projector_test, journal_test, restart_test).
#include "store/projection_plan.hpp"

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "store/database.hpp"
#include "support/decimal.hpp"

using store::ChangeStep;
using store::CopyStep;
using store::PlanLimits;
using store::ProjectionPlan;
using store::ProjectionRows;
using store::RowRange;
using store::StoredIds;
using testing_support::dec;

namespace {

market::OrderRow order(market::OrderId id) {
  return {id,         "1",          "X", dec("10"),    dec("5"), dec("10"),
          1519348326, std::nullopt, id,  std::nullopt, false};
}

market::ExecutionRow execution(std::int64_t id, market::OrderId buy, market::OrderId sell) {
  return {id, buy, sell, dec("1"), dec("5"), 1519348326};
}

void add_account(ProjectionRows& rows, const std::string& id) {
  rows.accounts[id] = {id, dec("1"), dec("1")};
}

void add_position(ProjectionRows& rows, const std::string& account, const std::string& symbol) {
  rows.positions[{account, symbol}] = {account, symbol, dec("1"), dec("0")};
}

std::string range(const char* name, RowRange r) {
  return std::string(name) + std::to_string(r.first) + "-" + std::to_string(r.last);
}

// "copy orders 0-4 w4", "change s0-1 a0-2 p0-0 o0-0 w9": a step, to compare plans as text.
std::string describe(const store::ProjectionStep& step) {
  if (const auto* copy = std::get_if<CopyStep>(&step))
    return std::string("copy ") +
           (copy->table == CopyStep::Table::orders ? "orders " : "executions ") +
           range("", copy->rows) + " w" + std::to_string(copy->work);
  const auto& c = std::get<ChangeStep>(step);
  return "change " + range("s", c.symbols) + " " + range("a", c.accounts) + " " +
         range("p", c.positions) + " " + range("o", c.orders) +
         (c.revised.size() > 0 ? " " + range("r", c.revised) : "") + " w" + std::to_string(c.work);
}

std::vector<std::string> describe(const ProjectionPlan& plan) {
  std::vector<std::string> out;
  for (const auto& step : plan.steps) out.push_back(describe(step));
  return out;
}

std::vector<market::OrderId> ids(const std::vector<const market::OrderRow*>& orders) {
  std::vector<market::OrderId> out;
  for (const auto* o : orders) out.push_back(o->id);
  return out;
}

// The execution ids of an order's run of fills.
std::vector<std::int64_t> fills(const ProjectionPlan& plan, RowRange run) {
  std::vector<std::int64_t> out;
  for (std::size_t i = run.first; i < run.last; ++i) out.push_back(plan.fills[i].second);
  return out;
}

std::size_t work_of_steps(const ProjectionPlan& plan) {
  std::size_t work = 0;
  for (const auto& step : plan.steps)
    work += std::visit([](const auto& s) { return s.work; }, step);
  return work;
}

// What Database::project sent before the plan, step for step: its loops, on counts alone
// (new orders; executions' ids; changed rows of symbols, accounts, positions, stored orders).
struct Model {
  std::size_t new_orders = 0;
  std::vector<std::int64_t> execution_ids;
  std::int64_t last_execution = 0;
  std::size_t changed[4] = {};
  PlanLimits limits;

  std::vector<std::string> steps() const {
    std::vector<std::string> out;
    const std::size_t per = limits.rows_per_statement;
    std::size_t at[4] = {}, copied = 0, done = 0, changed_rows = 0;
    for (std::size_t n : changed) changed_rows += n;
    std::size_t new_rows = new_orders;
    for (std::int64_t id : execution_ids) new_rows += id > last_execution ? 1 : 0;
    const auto more = [&] { return done < changed_rows; };
    const auto write = [&] {
      std::string text = "change";
      std::size_t rows = 0;
      for (int t = 0; t < 4; ++t) {
        const std::size_t from = at[t];
        while (at[t] < changed[t] && at[t] - from < per) ++at[t];
        text += std::string(" ") + "sapo"[t] + std::to_string(from) + "-" + std::to_string(at[t]);
        rows += at[t] - from;
      }
      done += rows;
      out.push_back(text + " w" + std::to_string(limits.changed_row_cost * rows));
    };
    const auto keep_up = [&] {
      while (more() && done * new_rows < copied * changed_rows) write();
    };
    for (std::size_t from = 0; from < new_orders; from += limits.rows_per_copy) {
      const std::size_t to = std::min(from + limits.rows_per_copy, new_orders);
      out.push_back("copy orders " + std::to_string(from) + "-" + std::to_string(to) + " w" +
                    std::to_string(to - from));
      copied += to - from;
      keep_up();
    }
    for (std::size_t it = 0; it < execution_ids.size();) {
      while (it < execution_ids.size() && execution_ids[it] <= last_execution) ++it;
      if (it == execution_ids.size()) break;
      const std::size_t from = it;
      while (it < execution_ids.size() && it - from < limits.rows_per_copy) ++it;
      out.push_back("copy executions " + std::to_string(from) + "-" + std::to_string(it) + " w" +
                    std::to_string(it - from));
      copied += it - from;
      keep_up();
    }
    while (more()) write();
    return out;
  }
};

const PlanLimits kSmall{4, 2, 3};

}  // namespace

TEST_CASE(
    "projection plan: orders after the last stored id are copied in id order, the others "
    "changed in id order",
    "[unit][projection]") {
  ProjectionRows rows;
  for (market::OrderId id : {5, 1, 9, 3, 7, 4}) rows.orders[id] = order(id);
  const auto plan = store::plan_projection(rows, StoredIds{4, 0}, kSmall);
  CHECK(ids(plan.new_orders) == std::vector<market::OrderId>{5, 7, 9});
  CHECK(ids(plan.stored_orders) == std::vector<market::OrderId>{1, 3, 4});
  CHECK(describe(plan) == std::vector<std::string>{"copy orders 0-3 w3",
                                                   "change s0-0 a0-0 p0-0 o0-2 w6",
                                                   "change s0-0 a0-0 p0-0 o2-3 w3"});
  CHECK(plan.work_in_all == 3 + 3 * 3);
}

TEST_CASE(
    "projection plan: executions after the last stored id are copied, each order with "
    "its new executions",
    "[unit][projection]") {
  ProjectionRows rows;
  for (market::OrderId id : {1, 2, 3, 4}) rows.orders[id] = order(id);
  rows.executions = {execution(10, 3, 1), execution(11, 2, 3), execution(12, 4, 3)};
  const auto plan = store::plan_projection(rows, StoredIds{2, 10}, kSmall);
  REQUIRE(ids(plan.new_orders) == std::vector<market::OrderId>{3, 4});
  REQUIRE(ids(plan.stored_orders) == std::vector<market::OrderId>{1, 2});
  CHECK(fills(plan, plan.new_order_fills[0]) == std::vector<std::int64_t>{11, 12});
  CHECK(fills(plan, plan.new_order_fills[1]) == std::vector<std::int64_t>{12});
  CHECK(fills(plan, plan.stored_order_fills[0]).empty());  // execution 10 is stored
  CHECK(fills(plan, plan.stored_order_fills[1]) == std::vector<std::int64_t>{11});
  // 4 new rows, 2 changed: a statement once the copied rows are ahead.
  CHECK(describe(plan) == std::vector<std::string>{"copy orders 0-2 w2",
                                                   "change s0-0 a0-0 p0-0 o0-2 w6",
                                                   "copy executions 1-3 w2"});
  CHECK(plan.work_in_all == 4 + 3 * 2);
}

TEST_CASE("projection plan: a batch whose executions are all stored already copies none",
          "[unit][projection]") {
  ProjectionRows rows;
  for (market::OrderId id : {1, 2, 3}) rows.orders[id] = order(id);
  rows.executions = {execution(7, 1, 2), execution(8, 3, 2)};
  const auto plan = store::plan_projection(rows, StoredIds{2, 8}, kSmall);
  CHECK(plan.fills.empty());
  REQUIRE(plan.new_order_fills.size() == 1);
  CHECK(plan.new_order_fills[0].size() == 0);
  CHECK(plan.stored_order_fills == std::vector<RowRange>{{0, 0}, {0, 0}});
  CHECK(describe(plan) ==
        std::vector<std::string>{"copy orders 0-1 w1", "change s0-0 a0-0 p0-0 o0-2 w6"});
  CHECK(plan.work_in_all == 1 + 3 * 2);
}

TEST_CASE("projection plan: changed rows in key order, symbols in the set's order",
          "[unit][projection]") {
  ProjectionRows rows;
  rows.symbols = {"ZZ", "AA", "MM"};
  for (const char* id : {"30", "10", "200", "2"}) add_account(rows, id);
  add_position(rows, "2", "B");
  add_position(rows, "10", "A");
  add_position(rows, "2", "A");
  const auto plan = store::plan_projection(rows, StoredIds{}, PlanLimits{4, 10, 3});
  std::vector<std::string> symbols, accounts, positions;
  for (const auto* s : plan.symbols) symbols.push_back(*s);
  for (const auto* a : plan.accounts) accounts.push_back(a->id);
  for (const auto* p : plan.positions) positions.push_back(p->account + "/" + p->symbol);
  CHECK(symbols == std::vector<std::string>{"AA", "MM", "ZZ"});
  CHECK(accounts == std::vector<std::string>{"10", "2", "200", "30"});  // as PostgreSQL's text
  CHECK(positions == std::vector<std::string>{"10/A", "2/A", "2/B"});
  CHECK(describe(plan) == std::vector<std::string>{"change s0-3 a0-4 p0-3 o0-0 w30"});
}

TEST_CASE(
    "projection plan: COPYs of at most rows_per_copy rows, statements of at most "
    "rows_per_statement rows of each table",
    "[unit][projection]") {
  ProjectionRows rows;
  for (market::OrderId id = 1; id <= 10; ++id) rows.orders[id] = order(id);
  for (std::int64_t id = 1; id <= 5; ++id) rows.executions.push_back(execution(id, 1, 2));
  for (int i = 0; i < 5; ++i) add_account(rows, "a" + std::to_string(i));
  add_position(rows, "a0", "X");
  rows.symbols = {"X"};
  const auto plan = store::plan_projection(rows, StoredIds{}, kSmall);
  // 15 new rows and 7 changed ones: after each COPY, the statements that bring the changed
  // rows' share (changed / 7) up to the copied rows' share (copied / 15).
  CHECK(describe(plan) == std::vector<std::string>{
                              "copy orders 0-4 w4",
                              "change s0-1 a0-2 p0-1 o0-0 w12",  // 4 of 7 changed, 4 of 15 copied
                              "copy orders 4-8 w4",              // 8 of 15: 4 of 7 keeps up
                              "copy orders 8-10 w2",
                              "change s1-1 a2-4 p1-1 o0-0 w6",  // 6 of 7, 10 of 15
                              "copy executions 0-4 w4",
                              "change s1-1 a4-5 p1-1 o0-0 w3",  // 7 of 7, 14 of 15
                              "copy executions 4-5 w1",
                          });
  CHECK(plan.work_in_all == 15 + 3 * 7);
  CHECK(work_of_steps(plan) == plan.work_in_all);
}

TEST_CASE("projection plan: with no new rows every statement comes at once", "[unit][projection]") {
  ProjectionRows rows;
  for (int i = 0; i < 5; ++i) add_account(rows, "a" + std::to_string(i));
  rows.orders[1] = order(1);
  const auto plan = store::plan_projection(rows, StoredIds{1, 0}, kSmall);
  CHECK(describe(plan) == std::vector<std::string>{"change s0-0 a0-2 p0-0 o0-1 w9",
                                                   "change s0-0 a2-4 p0-0 o1-1 w6",
                                                   "change s0-0 a4-5 p0-0 o1-1 w3"});
  CHECK(plan.work_in_all == 3 * 6);
}

TEST_CASE(
    "projection plan: revised stored orders go with the statement that holds them, revised "
    "new ones are only copied",
    "[unit][projection]") {
  ProjectionRows rows;
  for (market::OrderId id = 1; id <= 6; ++id) rows.orders[id] = order(id);
  for (market::OrderId id : {2, 4, 5}) rows.orders[id].revised = true;
  const auto plan = store::plan_projection(rows, StoredIds{4, 0}, kSmall);
  CHECK(ids(plan.stored_orders) == std::vector<market::OrderId>{1, 2, 3, 4});
  CHECK(ids(plan.revised_orders) == std::vector<market::OrderId>{2, 4});
  CHECK(ids(plan.new_orders) == std::vector<market::OrderId>{5, 6});
  CHECK(describe(plan) == std::vector<std::string>{"copy orders 0-2 w2",
                                                   "change s0-0 a0-0 p0-0 o0-2 r0-1 w9",
                                                   "change s0-0 a0-0 p0-0 o2-4 r1-2 w9"});
  CHECK(plan.work_in_all == 2 + 3 * (4 + 2));
  CHECK(work_of_steps(plan) == plan.work_in_all);
}

TEST_CASE("projection plan: every revised stored order in the statement of its changes",
          "[unit][projection]") {
  std::mt19937 random(48);
  const auto upto = [&](int n) { return std::uniform_int_distribution<int>(0, n)(random); };
  for (int round = 0; round < 300; ++round) {
    const PlanLimits limits{static_cast<std::size_t>(1 + upto(40)),
                            static_cast<std::size_t>(1 + upto(15)),
                            static_cast<std::size_t>(1 + upto(4))};
    ProjectionRows rows;
    const int stored = upto(60), fresh = upto(60);
    std::vector<market::OrderId> revised;
    for (market::OrderId id = 1; id <= stored + fresh; ++id) {
      rows.orders[id] = order(id);
      rows.orders[id].revised = upto(3) == 0;
      if (rows.orders[id].revised && id <= stored) revised.push_back(id);
    }
    for (int i = upto(30); i > 0; --i) add_account(rows, std::to_string(i));
    const int executions = upto(40);
    for (std::int64_t id = 1; id <= executions; ++id)
      rows.executions.push_back(execution(id, 1 + upto(stored + fresh), stored + fresh + 1));
    INFO("round " << round);
    const auto plan = store::plan_projection(rows, StoredIds{stored, 0}, limits);
    CHECK(ids(plan.revised_orders) == revised);
    // Without the marks, the same steps but for the revised ranges and their work.
    ProjectionRows plain = rows;
    for (auto& [id, row] : plain.orders) row.revised = false;
    const auto plain_plan = store::plan_projection(plain, StoredIds{stored, 0}, limits);
    REQUIRE(plan.steps.size() == plain_plan.steps.size());
    std::size_t next = 0;
    for (std::size_t i = 0; i < plan.steps.size(); ++i) {
      const auto* change = std::get_if<ChangeStep>(&plan.steps[i]);
      if (!change) {
        CHECK(describe(plan.steps[i]) == describe(plain_plan.steps[i]));
        continue;
      }
      const auto& plain_change = std::get<ChangeStep>(plain_plan.steps[i]);
      CHECK(change->orders == plain_change.orders);
      CHECK(plain_change.revised.size() == 0);
      CHECK(change->revised.first == next);  // in order, none left out
      next = change->revised.last;
      for (std::size_t r = change->revised.first; r < change->revised.last; ++r) {
        const market::OrderId id = plan.revised_orders[r]->id;
        REQUIRE(change->orders.size() > 0);
        CHECK(id >= plan.stored_orders[change->orders.first]->id);
        CHECK(id <= plan.stored_orders[change->orders.last - 1]->id);
      }
      CHECK(change->work == limits.changed_row_cost * (change->rows() + change->revised.size()));
    }
    CHECK(next == revised.size());
    CHECK(work_of_steps(plan) == plan.work_in_all);
    CHECK(plan.work_in_all == plain_plan.work_in_all + limits.changed_row_cost * revised.size());
  }
}

TEST_CASE("projection plan: an empty batch has no step and no work", "[unit][projection]") {
  const auto plan = store::plan_projection(ProjectionRows{}, StoredIds{100, 100}, kSmall);
  CHECK(plan.steps.empty());
  CHECK(plan.work_in_all == 0);
  CHECK(plan.new_orders.empty());
  CHECK(plan.fills.empty());
}

TEST_CASE("projection plan: at the database's sizes", "[unit][projection]") {
  const PlanLimits limits{store::Database::kRowsPerStep, store::Database::kRowsPerPace,
                          store::Database::kChangedRowCost};
  ProjectionRows rows;
  const market::OrderId orders = 2 * store::Database::kRowsPerStep + 10;
  for (market::OrderId id = 1; id <= orders; ++id) rows.orders[id] = order(id);
  for (int i = 0; i < 600; ++i) add_account(rows, std::to_string(100000 + i));
  const auto plan = store::plan_projection(rows, StoredIds{}, limits);
  // 10,010 copied and 600 changed rows: after 5,000 copied, 300 changed (two statements);
  // after 10,000, 600 (one more statement and a half, so two); none left after the last COPY.
  CHECK(describe(plan) == std::vector<std::string>{
                              "copy orders 0-5000 w5000",
                              "change s0-0 a0-250 p0-0 o0-0 w750",
                              "change s0-0 a250-500 p0-0 o0-0 w750",
                              "copy orders 5000-10000 w5000",
                              "change s0-0 a500-600 p0-0 o0-0 w300",
                              "copy orders 10000-10010 w10",
                          });
  CHECK(plan.work_in_all == 10010 + 3 * 600);
}

TEST_CASE("projection plan: step for step what the write sent before the plan",
          "[unit][projection]") {
  std::mt19937 random(39);
  const auto upto = [&](int n) { return std::uniform_int_distribution<int>(0, n)(random); };
  for (int round = 0; round < 300; ++round) {
    Model model;
    model.limits =
        PlanLimits{static_cast<std::size_t>(1 + upto(40)), static_cast<std::size_t>(1 + upto(15)),
                   static_cast<std::size_t>(1 + upto(4))};
    ProjectionRows rows;
    const int stored_orders = upto(60), new_orders = upto(120);
    for (market::OrderId id = 1; id <= stored_orders + new_orders; ++id)
      rows.orders[id] = order(id);
    const int executions = upto(100);
    model.last_execution = upto(executions);
    for (std::int64_t id = 1; id <= executions; ++id) {
      // Two orders of the batch, never one order twice.
      const int orders = stored_orders + new_orders;
      const market::OrderId buy = 1 + upto(orders - 1);
      const market::OrderId sell = orders < 2 ? buy + 1 : 1 + (buy + upto(orders - 2)) % orders;
      rows.executions.push_back(execution(id, buy, sell));
      model.execution_ids.push_back(id);
    }
    for (int i = upto(5); i > 0; --i) rows.symbols.insert("S" + std::to_string(i));
    for (int i = upto(50); i > 0; --i) add_account(rows, std::to_string(i));
    for (int i = upto(50); i > 0; --i)
      add_position(rows, std::to_string(i % 7), "S" + std::to_string(i));
    model.new_orders = new_orders;
    model.changed[0] = rows.symbols.size();
    model.changed[1] = rows.accounts.size();
    model.changed[2] = rows.positions.size();
    model.changed[3] = stored_orders;

    const auto plan =
        store::plan_projection(rows, StoredIds{stored_orders, model.last_execution}, model.limits);
    INFO("round " << round);
    REQUIRE(describe(plan) == model.steps());
    CHECK(work_of_steps(plan) == plan.work_in_all);
    // Each order's fills: its new executions, in id order.
    const auto new_executions_of = [&](market::OrderId order) {
      std::vector<std::int64_t> out;
      for (const auto& e : rows.executions)
        if (e.id > model.last_execution && (e.buy_order == order || e.sell_order == order))
          out.push_back(e.id);
      return out;
    };
    for (std::size_t i = 0; i < plan.new_orders.size(); ++i)
      CHECK(fills(plan, plan.new_order_fills[i]) == new_executions_of(plan.new_orders[i]->id));
    for (std::size_t i = 0; i < plan.stored_orders.size(); ++i)
      CHECK(fills(plan, plan.stored_order_fills[i]) ==
            new_executions_of(plan.stored_orders[i]->id));
  }
}
