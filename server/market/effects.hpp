#pragma once
// The durable consequences of applying a request: rows to write. The engine appends a row each
// time it changes something; a later row for the same key supersedes an earlier one, so the
// store can merge many requests into one write by keeping the last row per key.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "market/decimal.hpp"
#include "market/types.hpp"

namespace market {

struct AccountRow {
  std::string id;
  Decimal balance;
  Decimal deposited;  // cash ever deposited; fixed at creation, kept for the conservation check
};

struct PositionRow {
  std::string account;
  std::string symbol;
  Decimal amount;
  Decimal granted;  // shares ever created by <create> for this position
};

struct OrderRow {
  OrderId id = 0;
  std::string account;
  std::string symbol;
  Decimal amount;  // as placed, or as a <replace> set it: executed + open (+ canceled)
  Decimal limit;   // zero for a market order (stored as NULL)
  Decimal open;    // a waiting stop's whole amount
  std::int64_t created_at = 0;
  std::optional<std::int64_t> canceled_at;
  // Time priority within its price level: the smaller rests first. A new order's is above
  // every earlier one's; a replace that loses priority and a stop's trigger give a new one.
  std::int64_t priority = 0;
  std::optional<Decimal> stop;  // set while a stop-limit order waits for its trigger
  // Set when amount, limit, priority or stop changed on an order stored before (a replace, a
  // trigger): the projection then writes those columns too, not only open and canceled_at.
  bool revised = false;
};

struct ExecutionRow {
  std::int64_t id = 0;
  OrderId buy_order = 0;
  OrderId sell_order = 0;
  Decimal shares;
  Decimal price;
  std::int64_t time = 0;
};

struct Effects {
  std::vector<std::string> symbols;  // created
  std::vector<AccountRow> accounts;
  std::vector<PositionRow> positions;
  std::vector<OrderRow> orders;
  std::vector<ExecutionRow> executions;
  // The engine's next time priority after these effects, when they placed or moved an order
  // (0: unchanged). Stored with the projection's position so that a load continues the count
  // exactly where the live run was (OrderRow::priority), as a replay from scratch does.
  std::int64_t next_priority = 0;

  bool empty() const {
    return symbols.empty() && accounts.empty() && positions.empty() && orders.empty() &&
           executions.empty();
  }
};

}  // namespace market
