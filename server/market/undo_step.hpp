#pragma once
// One change to the engine's state that a refused call takes back: the engine notes one before
// each change while a step is open, and undoes them newest first (market/engine_steps.cpp).
// Each holds what the state was, or how to find the change again.
#include <cstdint>
#include <optional>
#include <variant>

#include "market/accounts.hpp"
#include "market/order_book.hpp"
#include "market/types.hpp"

namespace market::undo {

struct Cash {
  Account* account;
  Decimal was;
};
struct Shares {
  Position* position;
  Decimal was;
};
struct NewPosition {
  Account* account;
  StringMap<Position>::iterator at;
};
struct OrderFields {
  Order* order;
  Decimal amount, limit, open;
  std::optional<std::int64_t> canceled_at;
  std::size_t fills;
  Position* position;
  std::int64_t priority;
  std::optional<Decimal> stop;
};
struct NewOrder {
  OrderId id;
};
struct Linked {
  OrderBook* book;
  Order* order;
  OrderBook::Place at;
};
struct Unlinked {
  OrderBook* book;
  Order* order;
  OrderBook::Place at;
  Order* next;  // what followed it in its level
};
struct Counted {
  Order* order;
  int delta;
};

using Step =
    std::variant<Cash, Shares, NewPosition, OrderFields, NewOrder, Linked, Unlinked, Counted>;

}  // namespace market::undo
