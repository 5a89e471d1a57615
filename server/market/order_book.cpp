#include "market/order_book.hpp"

namespace market {

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

namespace {

// Walks one side from its best price while prices cross `crosses`.
template <typename Side, typename Crosses>
OrderBook::Lookahead walk(const Side& side, Crosses crosses, Decimal amount,
                          std::size_t stop_after) {
  OrderBook::Lookahead out;
  Decimal left = amount;
  for (const auto& [price, level] : side) {
    if (!crosses(price)) break;
    for (const Order* resting : level) {
      ++out.executions;
      left -= min(left, resting->open);
      if (!left.is_positive()) {
        out.filled = true;
        return out;
      }
      if (out.executions > stop_after) return out;
    }
  }
  return out;
}

}  // namespace

OrderBook::Lookahead OrderBook::look_ahead(bool buy, Decimal limit, Decimal amount,
                                           std::size_t stop_after) const {
  if (buy)
    return walk(
        asks_, [&](const Decimal& price) { return price <= limit; }, amount, stop_after);
  return walk(
      bids_, [&](const Decimal& price) { return price >= limit; }, amount, stop_after);
}

}  // namespace market
