#include "store/projection_plan.hpp"

#include <algorithm>
#include <array>
#include <cassert>

namespace store {
namespace {

using Fills = std::vector<std::pair<market::OrderId, std::int64_t>>;

// The rows of `map` whose entries `wanted` accepts, sorted by key.
template <typename Map, typename Wanted>
auto in_key_order(const Map& map, Wanted wanted) {
  std::vector<const typename Map::value_type*> entries;
  entries.reserve(map.size());
  for (const auto& entry : map)
    if (wanted(entry)) entries.push_back(&entry);
  std::sort(entries.begin(), entries.end(),
            [](const auto* a, const auto* b) { return a->first < b->first; });
  std::vector<const typename Map::mapped_type*> rows;
  rows.reserve(entries.size());
  for (const auto* entry : entries) rows.push_back(&entry->second);
  return rows;
}

const auto kAll = [](const auto&) { return true; };

// (order, execution) for both orders of each execution after `last_execution`, sorted.
Fills fills_of(const std::vector<market::ExecutionRow>& executions, std::int64_t last_execution) {
  Fills fills;
  fills.reserve(2 * executions.size());
  for (const auto& e : executions) {
    if (e.id <= last_execution) continue;
    fills.emplace_back(e.buy_order, e.id);
    fills.emplace_back(e.sell_order, e.id);
  }
  std::sort(fills.begin(), fills.end());
  return fills;
}

// Each order's run in `fills`, for `orders` in increasing id order: one cursor moving forward.
std::vector<RowRange> runs_in(const Fills& fills,
                              const std::vector<const market::OrderRow*>& orders) {
  std::vector<RowRange> runs;
  runs.reserve(orders.size());
  std::size_t at = 0;
  for (const market::OrderRow* order : orders) {
    while (at < fills.size() && fills[at].first < order->id) ++at;
    RowRange run{at, at};
    while (at < fills.size() && fills[at].first == order->id) ++at;
    run.last = at;
    runs.push_back(run);
  }
  return runs;
}

// Lays out the steps: COPYs as they come, and after each the statements of changed rows that
// keep the changed rows' share of the write up with the copied rows'.
class Layout {
 public:
  Layout(ProjectionPlan& plan, PlanLimits limits, std::size_t new_rows)
      : plan_(plan), limits_(limits), new_rows_(new_rows) {
    sizes_ = {plan.symbols.size(), plan.accounts.size(), plan.positions.size(),
              plan.stored_orders.size()};
    for (std::size_t n : sizes_) changed_rows_ += n;
  }

  std::size_t changed_rows() const { return changed_rows_; }

  void copy(CopyStep::Table table, RowRange rows) {
    plan_.steps.push_back(CopyStep{table, rows, rows.size()});
    copied_ += rows.size();
    while (more_changes() && changed_ * new_rows_ < copied_ * changed_rows_) change();
  }

  // The changed rows no COPY has been followed by yet.
  void rest() {
    while (more_changes()) change();
  }

 private:
  bool more_changes() const { return changed_ < changed_rows_; }

  // One statement: up to rows_per_statement rows of each table, and the revised orders among
  // its orders (a subsequence of stored_orders, both in id order: one cursor moving forward).
  void change() {
    RowRange ranges[4];
    for (std::size_t t = 0; t < 4; ++t) {
      ranges[t] = {at_[t], std::min(at_[t] + limits_.rows_per_statement, sizes_[t])};
      at_[t] = ranges[t].last;
    }
    RowRange revised{revised_at_, revised_at_};
    if (ranges[3].size() > 0) {
      const market::OrderId last = plan_.stored_orders[ranges[3].last - 1]->id;
      while (revised.last < plan_.revised_orders.size() &&
             plan_.revised_orders[revised.last]->id <= last)
        ++revised.last;
    }
    revised_at_ = revised.last;
    ChangeStep step{ranges[0], ranges[1], ranges[2], ranges[3], revised, 0};
    step.work = limits_.changed_row_cost * (step.rows() + revised.size());
    changed_ += step.rows();
    plan_.steps.push_back(step);
  }

  ProjectionPlan& plan_;
  const PlanLimits limits_;
  const std::size_t new_rows_;
  std::array<std::size_t, 4> sizes_{}, at_{};  // symbols, accounts, positions, stored orders
  std::size_t changed_rows_ = 0, copied_ = 0, changed_ = 0;
  std::size_t revised_at_ = 0;  // in revised_orders
};

// The COPYs of executions: from the first one after `last_execution`, rows_per_copy rows to a
// COPY (the batch has them in id order, so all after it are new).
void copy_executions(Layout& layout, const std::vector<market::ExecutionRow>& executions,
                     std::int64_t last_execution, std::size_t rows_per_copy) {
  for (std::size_t at = 0; at < executions.size();) {
    while (at < executions.size() && executions[at].id <= last_execution) ++at;
    if (at == executions.size()) break;
    const RowRange rows{at, std::min(at + rows_per_copy, executions.size())};
    layout.copy(CopyStep::Table::executions, rows);
    at = rows.last;
  }
}

}  // namespace

ProjectionPlan plan_projection(const ProjectionRows& rows, StoredIds stored, PlanLimits limits) {
  assert(limits.rows_per_copy > 0 && limits.rows_per_statement > 0);
  ProjectionPlan plan;
  const auto is_stored = [&](const auto& entry) { return entry.first <= stored.last_order; };
  const auto is_new = [&](const auto& entry) { return !is_stored(entry); };
  plan.new_orders = in_key_order(rows.orders, is_new);
  for (const std::string& symbol : rows.symbols) plan.symbols.push_back(&symbol);
  plan.accounts = in_key_order(rows.accounts, kAll);
  plan.positions = in_key_order(rows.positions, kAll);
  plan.stored_orders = in_key_order(rows.orders, is_stored);
  for (const market::OrderRow* order : plan.stored_orders)
    if (order->revised) plan.revised_orders.push_back(order);
  plan.fills = fills_of(rows.executions, stored.last_execution);
  plan.new_order_fills = runs_in(plan.fills, plan.new_orders);
  plan.stored_order_fills = runs_in(plan.fills, plan.stored_orders);

  const std::size_t new_executions = static_cast<std::size_t>(
      std::count_if(rows.executions.begin(), rows.executions.end(),
                    [&](const market::ExecutionRow& e) { return e.id > stored.last_execution; }));
  const std::size_t new_rows = plan.new_orders.size() + new_executions;
  Layout layout(plan, limits, new_rows);
  for (std::size_t at = 0; at < plan.new_orders.size(); at += limits.rows_per_copy)
    layout.copy(CopyStep::Table::orders,
                {at, std::min(at + limits.rows_per_copy, plan.new_orders.size())});
  copy_executions(layout, rows.executions, stored.last_execution, limits.rows_per_copy);
  layout.rest();
  plan.work_in_all =
      new_rows + limits.changed_row_cost * (layout.changed_rows() + plan.revised_orders.size());
  return plan;
}

}  // namespace store
