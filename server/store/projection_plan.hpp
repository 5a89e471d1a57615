#pragma once
// What a projection write sends to PostgreSQL, and in which order, decided without a database:
// the plan that Database::project (store/projection_sql.cpp) carries out step by step.
//   - New rows, the orders and executions after the largest stored ids, are appended by COPY,
//     at most rows_per_copy to a COPY: the orders first, in id order (each primary-key entry
//     then goes to the rightmost leaf), then the executions in the batch's order (id order).
//   - Changed rows, the symbols, accounts, positions and orders stored before, go in
//     statements of at most rows_per_statement rows of each table, in key order (neighbours in
//     an index, and for orders on the heap, are written one after another).
//   - After each COPY come as many statements as keep the changed rows' share of the write up
//     with the copied rows' share, so that they are spread through the write; the rest follow
//     the last COPY.
//   - Orders stored before whose amount, limit, priority or stop changed (OrderRow::revised: a
//     <replace>, a stop's trigger) get those columns written too, by a statement of their own
//     sent just before the statement of changed rows that holds them (ChangeStep::revised): a
//     write without such orders, every write of plain limit orders, sends what it sent before
//     they existed, and the plan's steps and pacing are the same either way.
// Why statements this small, spread so and in key order: docs/notes/performance-history.md,
// "The bursts left in a write" and "The projection's fence for the whole write".
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "market/effects.hpp"
#include "store/projection_rows.hpp"

namespace store {

// Elements [first, last) of one of a plan's lists.
struct RowRange {
  std::size_t first = 0;
  std::size_t last = 0;

  std::size_t size() const { return last - first; }
  bool operator==(const RowRange& o) const { return first == o.first && last == o.last; }
};

// Where the tables are before the write: rows with ids at or below these are stored already.
struct StoredIds {
  market::OrderId last_order = 0;
  std::int64_t last_execution = 0;
};

// How a write is cut up (Database::kRowsPerStep, kRowsPerPace and kChangedRowCost).
struct PlanLimits {
  std::size_t rows_per_copy = 0;
  std::size_t rows_per_statement = 0;  // of each table
  std::size_t changed_row_cost = 0;    // a changed row's work; a copied row's is 1
};

// One COPY: `rows` of ProjectionPlan::new_orders, or of ProjectionRows::executions.
struct CopyStep {
  enum class Table { orders, executions };
  Table table = Table::orders;
  RowRange rows;
  std::size_t work = 0;  // one per row
};

// One statement of changed rows: ranges of the plan's symbols, accounts, positions and
// stored_orders; before it, when `revised` is not empty, one statement of those revised_orders
// (the revised ones among `orders`).
struct ChangeStep {
  RowRange symbols, accounts, positions, orders;
  RowRange revised;
  std::size_t work = 0;  // changed_row_cost per row, the revised rows' counted once more

  // The rows of the statement of changed rows (the revised ones are among `orders`).
  std::size_t rows() const {
    return symbols.size() + accounts.size() + positions.size() + orders.size();
  }
};

using ProjectionStep = std::variant<CopyStep, ChangeStep>;

// The rows point into the ProjectionRows planned, which must outlive the plan.
struct ProjectionPlan {
  std::vector<const market::OrderRow*> new_orders;  // id order
  std::vector<const std::string*> symbols;          // the set's order
  std::vector<const market::AccountRow*> accounts;  // key order
  std::vector<const market::PositionRow*> positions;
  std::vector<const market::OrderRow*> stored_orders;  // id order
  // The stored_orders marked revised, id order: their amount, limit, priority and stop change.
  std::vector<const market::OrderRow*> revised_orders;
  // (order, execution) for both orders of each new execution, sorted: an order's new
  // executions are a run, new_order_fills[i] new_orders[i]'s and stored_order_fills[i]
  // stored_orders[i]'s (the engine records both orders of an execution in the same request's
  // effects, so every order named here has its row in the batch).
  std::vector<std::pair<market::OrderId, std::int64_t>> fills;
  std::vector<RowRange> new_order_fills;
  std::vector<RowRange> stored_order_fills;

  std::vector<ProjectionStep> steps;  // in the order they are sent
  // The new rows, and changed_row_cost for each changed row and each revised one: the steps'
  // work summed.
  std::size_t work_in_all = 0;
};

// The plan for writing `rows` into tables that hold `stored`.
ProjectionPlan plan_projection(const ProjectionRows& rows, StoredIds stored, PlanLimits limits);

}  // namespace store
