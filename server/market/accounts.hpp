#pragma once
// An account's money and holdings. Cash and positions never go below zero: what open orders
// reserve has already been taken out of them.
#include <string>

#include "market/decimal.hpp"
#include "market/string_map.hpp"

namespace market {

struct Position {
  Decimal amount;   // shares held and not reserved by open sells
  Decimal granted;  // shares ever created for this position by <create>
};

struct Account {
  Decimal cash;       // available, not reserved by open buys
  Decimal deposited;  // the balance it was created with
  StringMap<Position> positions;
  std::size_t open_orders = 0;  // resting on a book
};

}  // namespace market
