#include "exchange/order_book.hpp"

namespace exchange {

void OrderBook::add(Order& order) {
  Level& level = order.is_buy() ? bids_[order.limit] : asks_[order.limit];
  order.level_position = level.insert(level.end(), &order);
}

template <typename Side>
void OrderBook::remove_from(Side& side, Order& order) {
  auto level = side.find(order.limit);
  if (level == side.end()) return;
  level->second.erase(order.level_position);
  if (level->second.empty()) side.erase(level);
}

void OrderBook::remove(Order& order) {
  if (order.is_buy())
    remove_from(bids_, order);
  else
    remove_from(asks_, order);
}

Order* OrderBook::best_match(const Order& incoming) const {
  if (incoming.is_buy()) {
    if (asks_.empty()) return nullptr;
    const auto& [price, level] = *asks_.begin();
    return price <= incoming.limit ? level.front() : nullptr;
  }
  if (bids_.empty()) return nullptr;
  const auto& [price, level] = *bids_.begin();
  return price >= incoming.limit ? level.front() : nullptr;
}

}  // namespace exchange
