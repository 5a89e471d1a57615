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

}  // namespace store
