#include "store/batch.hpp"

namespace store {

void Batch::merge(exchange::Effects&& fx) {
  ++requests;
  for (auto& s : fx.symbols) symbols.insert(std::move(s));
  for (auto& a : fx.accounts) accounts[a.id] = std::move(a);
  for (auto& p : fx.positions) positions[{p.account, p.symbol}] = std::move(p);
  for (auto& o : fx.orders) orders[o.id] = std::move(o);
  executions.insert(executions.end(), std::make_move_iterator(fx.executions.begin()),
                    std::make_move_iterator(fx.executions.end()));
}

void Batch::merge(Batch&& later) {
  if (empty()) {
    *this = std::move(later);
    return;
  }
  requests += later.requests;
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
