#pragma once
// One symbol's book: price levels, each a FIFO queue of resting orders. Bids are kept highest
// price first, asks lowest first, so the best opposite order is always the front of the first
// level. Beside them, the stop-limit orders waiting for their trigger, by stop price: buy stops
// lowest first, sell stops highest first, so the triggered ones are always a prefix. The book
// only holds pointers; the engine owns the orders (and undoes its changes through
// remove()/insert_before(), market/engine_steps.cpp).
#include <functional>
#include <list>
#include <map>
#include <string>
#include <vector>

#include "market/types.hpp"

namespace market {

class OrderBook {
 public:
  enum class Queue : std::uint8_t { Bids, Asks, BuyStops, SellStops };
  // Where an order waits: its queue, and its price there (the limit on the book, the stop
  // price while it waits for its trigger).
  struct Place {
    Queue queue = Queue::Bids;
    Decimal price;
  };
  // Where `order` belongs now: on the book at its limit, or with the stops while it waits.
  static Place place_of(const Order& order);

  // Puts an order at the back of its level at `at` (time priority).
  void append(Order& order, const Place& at);
  // Takes it out of its level at `at`; returns the order that followed it there (or null),
  // which insert_before() needs to put it back exactly.
  Order* remove(Order& order, const Place& at);
  // Puts it back before `next` (at the back when null): undoes remove().
  void insert_before(Order& order, const Place& at, Order* next);
  // The same at the order's own place (place_of).
  void add(Order& order) { append(order, place_of(order)); }
  Order* remove(Order& order) { return remove(order, place_of(order)); }

  // The earliest order at the best opposite price that crosses `incoming`'s limit (any price
  // for a market order), or null.
  Order* best_match(const Order& incoming) const;
  // Appends to `out` the waiting stops an execution at `price` triggers, by stop price, at most
  // `most` of them (the caller's budget bounds the walk).
  void triggered_by(Decimal price, std::size_t most, std::vector<Order*>& out) const;
  bool has_stops() const { return !buy_stops_.empty() || !sell_stops_.empty(); }

  // What matching an incoming order would do, without doing it: how many resting orders it
  // would execute against (counting stops past `stop_after`, so the look costs at most that
  // many steps), whether it would be filled completely (so it would not rest), and what the
  // executions would cost (the sum of shares x price). `limit` zero: a market order.
  struct Lookahead {
    std::size_t executions = 0;
    bool filled = false;
    Decimal cost;
  };
  Lookahead look_ahead(bool buy, Decimal limit, Decimal amount, std::size_t stop_after) const;

  // Each queue's levels, best first, with their orders' ids in time priority (for tests).
  std::string describe() const;

  std::size_t bid_levels() const { return bids_.size(); }
  std::size_t ask_levels() const { return asks_.size(); }

 private:
  using Level = std::list<Order*>;
  template <typename Fn>
  auto on_queue(Queue queue, Fn fn);

  std::map<Decimal, Level, std::greater<Decimal>> bids_;
  std::map<Decimal, Level, std::less<Decimal>> asks_;
  std::map<Decimal, Level, std::less<Decimal>> buy_stops_;
  std::map<Decimal, Level, std::greater<Decimal>> sell_stops_;
};

}  // namespace market
