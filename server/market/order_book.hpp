#pragma once
// One symbol's book: price levels, each a FIFO queue of resting orders. Bids are kept highest
// price first, asks lowest first, so the best opposite order is always the front of the first
// level. The book only holds pointers; the engine owns the orders.
#include <functional>
#include <list>
#include <map>

#include "market/types.hpp"

namespace market {

class OrderBook {
 public:
  // Rests an open order at the back of its price level (time priority).
  void add(Order& order);
  // Takes an order off the book (filled or canceled).
  void remove(Order& order);
  // The earliest order at the best opposite price that crosses `incoming`'s limit, or null.
  Order* best_match(const Order& incoming) const;

  // What matching an incoming order would do, without doing it: how many resting orders it
  // would execute against (counting stops past `stop_after`, so the look costs at most that
  // many steps) and whether it would be filled completely (so it would not rest).
  struct Lookahead {
    std::size_t executions = 0;
    bool filled = false;
  };
  Lookahead look_ahead(bool buy, Decimal limit, Decimal amount, std::size_t stop_after) const;

  std::size_t bid_levels() const { return bids_.size(); }
  std::size_t ask_levels() const { return asks_.size(); }

 private:
  using Level = std::list<Order*>;
  template <typename Side>
  static void remove_from(Side& side, Order& order);

  std::map<Decimal, Level, std::greater<Decimal>> bids_;
  std::map<Decimal, Level, std::less<Decimal>> asks_;
};

}  // namespace market
