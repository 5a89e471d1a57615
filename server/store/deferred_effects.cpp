#include "store/deferred_effects.hpp"

#include <utility>

namespace store {

std::size_t rows_of(const market::Effects& fx) {
  return fx.symbols.size() + fx.accounts.size() + fx.positions.size() + fx.orders.size() +
         fx.executions.size();
}

void DeferredEffects::add(market::Effects&& fx) {
  rows_ += rows_of(fx);
  effects_.push_back(std::move(fx));
}

std::vector<market::Effects> DeferredEffects::take() {
  rows_ = 0;
  return std::exchange(effects_, {});
}

}  // namespace store
