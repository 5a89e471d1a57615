// The engine's changes that a refused call takes back. place() and replace() open a step; every
// change to an account, a position, an order or a queue then goes through one of these, which
// notes how to undo it (market/undo_step.hpp). A call that finds itself over its budget only
// after matching (the stops it triggered executed too much) rolls the step back: the state, the
// id counters and the effects are as they were before the call.
#include <stdexcept>
#include <type_traits>

#include "market/engine.hpp"

namespace market {

void Engine::begin_step(const Effects& fx) {
  undo_.clear();
  in_step_ = true;
  step_start_ = {next_order_id_,     next_execution_id_,  next_priority_,   fx.symbols.size(),
                 fx.accounts.size(), fx.positions.size(), fx.orders.size(), fx.executions.size()};
}

void Engine::end_step() {
  undo_.clear();
  in_step_ = false;
}

void Engine::add_cash(Account& acct, Decimal delta) {
  if (in_step_) undo_.push_back(undo::Cash{&acct, acct.cash});
  acct.cash += delta;
}

void Engine::add_shares_held(Account&, Position& pos, Decimal delta) {
  if (in_step_) undo_.push_back(undo::Shares{&pos, pos.amount});
  pos.amount += delta;
}

Position& Engine::position_of(Account& acct, const std::string& symbol) {
  auto [it, added] = acct.positions.try_emplace(symbol);
  if (added && in_step_) undo_.push_back(undo::NewPosition{&acct, it});
  return it->second;
}

void Engine::touch(Order& o) {
  if (!in_step_) return;
  undo_.push_back(undo::OrderFields{&o, o.amount, o.limit, o.open, o.canceled_at, o.fills.size(),
                                    o.position, o.priority, o.stop});
}

Order& Engine::new_order(OrderId id) {
  if (in_step_) undo_.push_back(undo::NewOrder{id});
  return orders_[id];
}

void Engine::link(OrderBook& book, Order& order) {
  const OrderBook::Place at = OrderBook::place_of(order);
  book.append(order, at);
  if (in_step_) undo_.push_back(undo::Linked{&book, &order, at});
}

void Engine::unlink(OrderBook& book, Order& order) {
  const OrderBook::Place at = OrderBook::place_of(order);
  Order* next = book.remove(order, at);
  if (in_step_) undo_.push_back(undo::Unlinked{&book, &order, at, next});
}

void Engine::count_open(Order& order, int delta) {
  open_orders_ += static_cast<std::size_t>(delta);
  order.owner->open_orders += static_cast<std::size_t>(delta);
  if (in_step_) undo_.push_back(undo::Counted{&order, delta});
}

void Engine::roll_back(Effects& fx) {
  for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) {
    std::visit(
        [&](auto& step) {
          using T = std::decay_t<decltype(step)>;
          if constexpr (std::is_same_v<T, undo::Cash>) {
            step.account->cash = step.was;
          } else if constexpr (std::is_same_v<T, undo::Shares>) {
            step.position->amount = step.was;
          } else if constexpr (std::is_same_v<T, undo::NewPosition>) {
            step.account->positions.erase(step.at);
          } else if constexpr (std::is_same_v<T, undo::OrderFields>) {
            Order& o = *step.order;
            o.amount = step.amount;
            o.limit = step.limit;
            o.open = step.open;
            o.canceled_at = step.canceled_at;
            o.fills.resize(step.fills);
            o.position = step.position;
            o.priority = step.priority;
            o.stop = step.stop;
          } else if constexpr (std::is_same_v<T, undo::NewOrder>) {
            orders_.erase(step.id);
          } else if constexpr (std::is_same_v<T, undo::Linked>) {
            step.book->remove(*step.order, step.at);
          } else if constexpr (std::is_same_v<T, undo::Unlinked>) {
            step.book->insert_before(*step.order, step.at, step.next);
          } else {
            static_assert(std::is_same_v<T, undo::Counted>);
            open_orders_ -= static_cast<std::size_t>(step.delta);
            step.order->owner->open_orders -= static_cast<std::size_t>(step.delta);
          }
        },
        *it);
  }
  next_order_id_ = step_start_.next_order_id;
  next_execution_id_ = step_start_.next_execution_id;
  next_priority_ = step_start_.next_priority;
  fx.symbols.resize(step_start_.symbols);
  fx.accounts.resize(step_start_.accounts);
  fx.positions.resize(step_start_.positions);
  fx.orders.resize(step_start_.orders);
  fx.executions.resize(step_start_.executions);
  end_step();
}

}  // namespace market
