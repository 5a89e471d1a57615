#include "market/order_book.hpp"

#include <iterator>

namespace market {

OrderBook::Place OrderBook::place_of(const Order& order) {
  if (order.stop) return {order.is_buy() ? Queue::BuyStops : Queue::SellStops, *order.stop};
  return {order.is_buy() ? Queue::Bids : Queue::Asks, order.limit};
}

template <typename Fn>
auto OrderBook::on_queue(Queue queue, Fn fn) {
  switch (queue) {
    case Queue::Bids:
      return fn(bids_);
    case Queue::Asks:
      return fn(asks_);
    case Queue::BuyStops:
      return fn(buy_stops_);
    case Queue::SellStops:
      break;
  }
  return fn(sell_stops_);
}

void OrderBook::append(Order& order, const Place& at) {
  on_queue(at.queue, [&](auto& side) {
    Level& level = side[at.price];
    order.level_position = level.insert(level.end(), &order);
  });
}

Order* OrderBook::remove(Order& order, const Place& at) {
  return on_queue(at.queue, [&](auto& side) -> Order* {
    auto level = side.find(at.price);
    if (level == side.end()) return nullptr;
    auto after = level->second.erase(order.level_position);
    Order* next = after == level->second.end() ? nullptr : *after;
    if (level->second.empty()) side.erase(level);
    return next;
  });
}

void OrderBook::insert_before(Order& order, const Place& at, Order* next) {
  on_queue(at.queue, [&](auto& side) {
    Level& level = side[at.price];
    order.level_position = level.insert(next ? next->level_position : level.end(), &order);
  });
}

Order* OrderBook::best_match(const Order& incoming) const {
  const bool market = incoming.is_market();
  if (incoming.is_buy()) {
    if (asks_.empty()) return nullptr;
    const auto& [price, level] = *asks_.begin();
    return market || price <= incoming.limit ? level.front() : nullptr;
  }
  if (bids_.empty()) return nullptr;
  const auto& [price, level] = *bids_.begin();
  return market || price >= incoming.limit ? level.front() : nullptr;
}

namespace {

// The orders of `side`'s levels from the first while `reached` holds, up to `most` in `out`.
template <typename Side, typename Reached>
void collect(const Side& side, Reached reached, std::size_t most, std::vector<Order*>& out) {
  for (auto it = side.begin(); it != side.end() && reached(it->first); ++it)
    for (Order* order : it->second) {
      if (out.size() >= most) return;
      out.push_back(order);
    }
}

}  // namespace

void OrderBook::triggered_by(Decimal price, std::size_t most, std::vector<Order*>& out) const {
  // A buy stop triggers at an execution price >= its stop, a sell stop at <= (PROTOCOL 4.7).
  collect(
      buy_stops_, [&](const Decimal& stop) { return stop <= price; }, most, out);
  collect(
      sell_stops_, [&](const Decimal& stop) { return stop >= price; }, most, out);
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
      const Decimal shares = min(left, resting->open);
      out.cost += shares * price;
      left -= shares;
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
  const bool market = limit.is_zero();
  if (buy)
    return walk(
        asks_, [&](const Decimal& price) { return market || price <= limit; }, amount, stop_after);
  return walk(
      bids_, [&](const Decimal& price) { return market || price >= limit; }, amount, stop_after);
}

namespace {

template <typename Side>
void describe_queue(const char* name, const Side& side, std::string& out) {
  for (const auto& [price, level] : side) {
    out += "  ";
    out += name;
    out += ' ' + price.to_string() + ':';
    for (const Order* o : level) out += ' ' + std::to_string(o->id);
    out += '\n';
  }
}

}  // namespace

std::string OrderBook::describe() const {
  std::string out;
  describe_queue("bid", bids_, out);
  describe_queue("ask", asks_, out);
  describe_queue("buy-stop", buy_stops_, out);
  describe_queue("sell-stop", sell_stops_, out);
  return out;
}

}  // namespace market
