#pragma once
// Plain data shared by the engine and its callers: orders, fills, and the status of an order.
#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <vector>

#include "market/decimal.hpp"

namespace market {

struct Account;
struct Position;

using OrderId = std::int64_t;

struct Fill {
  Decimal shares;
  Decimal price;
  std::int64_t time = 0;  // seconds since the Unix epoch
};

struct Order {
  OrderId id = 0;
  std::string account;
  std::string symbol;
  Decimal amount;  // as placed: positive buys, negative sells
  Decimal limit;
  Decimal open;  // unfilled remainder; once canceled, the canceled remainder
  std::int64_t created_at = 0;
  std::optional<std::int64_t> canceled_at;
  std::vector<Fill> fills;  // oldest first

  bool is_buy() const { return amount.is_positive(); }
  bool is_open() const { return !canceled_at && open.is_positive(); }

  // Where the order rests in its price level, valid while is_open(); lets cancel be O(1).
  std::list<Order*>::iterator level_position;
  // The engine's entries for its account and, for a buy once it has filled, its position in
  // the symbol: a fill then looks nothing up by name. Engine-owned; accounts and positions are
  // never removed (only all at once, with the orders) and their maps' nodes never move.
  Account* owner = nullptr;
  Position* position = nullptr;
};

// What <query> and <cancel> report.
struct OrderStatus {
  OrderId id = 0;
  Decimal open;  // zero when nothing is open
  std::optional<Decimal> canceled_shares;
  std::int64_t canceled_at = 0;
  std::vector<Fill> fills;
};

}  // namespace market
