#pragma once
// Plain data shared by the engine and its callers: orders, fills, and the status of an order.
#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <vector>

#include "market/decimal.hpp"

namespace market {

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
