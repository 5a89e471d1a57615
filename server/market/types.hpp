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

// How long an order may wait for a match (docs/PROTOCOL.md, section 4.5).
enum class TimeInForce : std::uint8_t {
  GoodTillCanceled,   // rests until it fills or is canceled
  ImmediateOrCancel,  // matches what it can at once; the rest is canceled
  FillOrKill,         // fills its whole amount at once, or is refused
};

// What an <order> asks for (docs/PROTOCOL.md, sections 4.1 and 4.5-4.7).
struct OrderTerms {
  Decimal amount;               // != 0: positive buys, negative sells
  Decimal limit;                // > 0; zero: a market order (IOC or FOK)
  std::optional<Decimal> stop;  // > 0: a stop-limit order (GTC, with a limit)
  TimeInForce tif = TimeInForce::GoodTillCanceled;

  bool is_market() const { return limit.is_zero(); }
};

struct Order {
  OrderId id = 0;
  std::string account;
  std::string symbol;
  Decimal amount;  // as placed (or replaced): positive buys, negative sells
  Decimal limit;   // zero: a market order, which never rests
  Decimal open;    // unfilled remainder; once canceled, the canceled remainder
  std::int64_t created_at = 0;
  std::optional<std::int64_t> canceled_at;
  std::vector<Fill> fills;  // oldest first
  // Time priority in its price level, smaller first: see OrderRow::priority.
  std::int64_t priority = 0;
  std::optional<Decimal> stop;  // set while a stop-limit order waits for its trigger

  bool is_buy() const { return amount.is_positive(); }
  bool is_open() const { return !canceled_at && open.is_positive(); }
  bool is_waiting() const { return stop.has_value() && is_open(); }
  bool is_market() const { return limit.is_zero(); }

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
  Decimal open;                 // zero when nothing is open
  std::optional<Decimal> stop;  // set: `open` waits for this stop price (no fills then)
  std::optional<Decimal> canceled_shares;
  std::int64_t canceled_at = 0;
  std::vector<Fill> fills;
};

}  // namespace market
