#include "store/projection_rows.hpp"

#include <algorithm>
#include <iterator>
#include <utility>

namespace store {
namespace {

// A later row of an order supersedes an earlier one, except that it stays `revised` if either
// was: the later row's amount, limit, priority and stop are the revised ones still, and a write
// that stores it must write them (a fill after a <replace> does not mark its row revised).
void supersede(std::unordered_map<market::OrderId, market::OrderRow>& orders,
               market::OrderRow&& later) {
  const bool later_revised = later.revised;
  auto [at, added] = orders.try_emplace(later.id, std::move(later));
  if (added) return;
  const bool revised = at->second.revised || later_revised;
  at->second = std::move(later);  // try_emplace moved nothing: the key was there
  at->second.revised = revised;
}

}  // namespace

void ProjectionRows::merge(market::Effects&& fx) {
  rows += rows_of(fx);
  merge_rows(std::move(fx));
}

void ProjectionRows::merge(DeferredEffects&& later) {
  rows += later.rows();
  for (auto& fx : later.take()) merge_rows(std::move(fx));
}

void ProjectionRows::merge_rows(market::Effects&& fx) {
  for (auto& s : fx.symbols) symbols.insert(std::move(s));
  for (auto& a : fx.accounts) accounts[a.id] = std::move(a);
  for (auto& p : fx.positions) positions[{p.account, p.symbol}] = std::move(p);
  for (auto& o : fx.orders) supersede(orders, std::move(o));
  executions.insert(executions.end(), std::make_move_iterator(fx.executions.begin()),
                    std::make_move_iterator(fx.executions.end()));
  next_priority = std::max(next_priority, fx.next_priority);
}

void ProjectionRows::merge(ProjectionRows&& later) {
  ProjectionRows theirs = std::exchange(later, ProjectionRows());
  if (empty()) {
    *this = std::move(theirs);  // the usual first merge of a write: nothing to supersede
    return;
  }
  rows += theirs.rows;
  symbols.merge(theirs.symbols);
  for (auto& [id, row] : theirs.accounts) accounts[id] = std::move(row);
  for (auto& [key, row] : theirs.positions) positions[key] = std::move(row);
  for (auto& [id, row] : theirs.orders) supersede(orders, std::move(row));
  executions.insert(executions.end(), std::make_move_iterator(theirs.executions.begin()),
                    std::make_move_iterator(theirs.executions.end()));
  next_priority = std::max(next_priority, theirs.next_priority);
}

bool ProjectionRows::empty() const {
  return symbols.empty() && accounts.empty() && positions.empty() && orders.empty() &&
         executions.empty();
}

}  // namespace store
