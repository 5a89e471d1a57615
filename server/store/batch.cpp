#include "store/batch.hpp"

namespace store {

namespace {

std::size_t rows_of(const market::Effects& fx) {
  return fx.symbols.size() + fx.accounts.size() + fx.positions.size() + fx.orders.size() +
         fx.executions.size();
}

}  // namespace

void Batch::merge(market::Effects&& fx) {
  ++requests;
  rows += rows_of(fx);
  merge_rows(std::move(fx));
}

void Batch::add(market::Effects&& fx) {
  ++requests;
  rows += rows_of(fx);
  unmerged.push_back(std::move(fx));
}

void Batch::fold() {
  for (auto& fx : unmerged) merge_rows(std::move(fx));
  unmerged.clear();
}

void Batch::merge_rows(market::Effects&& fx) {
  for (auto& s : fx.symbols) symbols.insert(std::move(s));
  for (auto& a : fx.accounts) accounts[a.id] = std::move(a);
  for (auto& p : fx.positions) positions[{p.account, p.symbol}] = std::move(p);
  for (auto& o : fx.orders) orders[o.id] = std::move(o);
  executions.insert(executions.end(), std::make_move_iterator(fx.executions.begin()),
                    std::make_move_iterator(fx.executions.end()));
}

void Batch::merge(Batch&& later) {
  fold();
  if (empty()) {
    *this = std::move(later);
    fold();
    return;
  }
  later.fold();
  requests += later.requests;
  rows += later.rows;
  symbols.merge(later.symbols);
  for (auto& [id, row] : later.accounts) accounts[id] = std::move(row);
  for (auto& [key, row] : later.positions) positions[key] = std::move(row);
  for (auto& [id, row] : later.orders) orders[id] = std::move(row);
  executions.insert(executions.end(), std::make_move_iterator(later.executions.begin()),
                    std::make_move_iterator(later.executions.end()));
  journal.insert(journal.end(), std::make_move_iterator(later.journal.begin()),
                 std::make_move_iterator(later.journal.end()));
}

}  // namespace store
