#pragma once
// A request, parsed and validated: what the XML asked for, with each child's attributes kept
// as written so replies can echo them. Children that cannot be applied carry their error.
#include <string>
#include <utility>
#include <vector>

#include "market/decimal.hpp"
#include "market/types.hpp"

namespace protocol {

// Attributes in document order, values exactly as the request wrote them.
using Attributes = std::vector<std::pair<std::string, std::string>>;

struct CreateItem {
  enum class Kind { Account, Position };
  Kind kind = Kind::Account;
  Attributes echo;      // what a reply for this item carries: id, or sym and id
  std::string invalid;  // non-empty: the error to reply, nothing is applied
  std::string account;
  std::string symbol;      // Position only
  market::Decimal amount;  // Account: balance; Position: shares
};

struct TransactionItem {
  enum class Kind { Order, Query, Cancel };
  Kind kind = Kind::Order;
  Attributes echo;                // the child's own attributes
  std::string invalid;            // non-empty: the error to reply, nothing is applied
  std::string symbol;             // Order
  market::Decimal amount, limit;  // Order
  market::OrderId order_id = 0;   // Query, Cancel
  bool order_id_exists = true;    // false when the id cannot name any order (too large)
};

struct Command {
  enum class Kind { Create, Transactions, Invalid };
  Kind kind = Kind::Invalid;
  std::string error;  // Invalid: why the whole request is refused
  std::vector<CreateItem> creates;
  std::string account;          // Transactions: the acting account
  std::string account_invalid;  // non-empty when the account id is malformed
  std::vector<TransactionItem> transactions;

  // True when applying it cannot change state (only queries, or invalid).
  bool is_read_only() const;
};

}  // namespace protocol
