#pragma once
// A request, parsed and validated: what the XML asked for, with each child's attributes kept
// as written so replies can echo them. Children that cannot be applied carry their reject: the
// value rules (names, numbers, signs) are checked here, once; the engine takes what passed them.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "market/decimal.hpp"
#include "market/reject.hpp"
#include "market/types.hpp"

namespace protocol {

// Attributes in document order, values exactly as the request wrote them.
using Attributes = std::vector<std::pair<std::string, std::string>>;

struct CreateItem {
  enum class Kind { Account, Position };
  Kind kind = Kind::Account;
  Attributes echo;                        // what a reply for this item carries: id, or sym and id
  std::optional<market::Reject> invalid;  // set: refused as written, nothing is applied
  std::string account;
  std::string symbol;      // Position only
  market::Decimal amount;  // Account: balance (>= 0); Position: shares (> 0)
};

struct TransactionItem {
  enum class Kind { Order, Query, Cancel, Replace };
  Kind kind = Kind::Order;
  Attributes echo;                        // the child's own attributes
  std::optional<market::Reject> invalid;  // set: refused as written, nothing is applied
  std::string symbol;                     // Order
  // Order: amount != 0, limit > 0 or zero (a market order, IOC or FOK), stop and tif.
  // Replace: the new open remainder (amount, > 0) and limit (> 0).
  market::OrderTerms terms;
  market::OrderId order_id = 0;  // Query, Cancel, Replace
  bool order_id_exists = true;   // false when the id cannot name any order (too large)
};

struct Command {
  enum class Kind { Create, Transactions, Invalid };
  Kind kind = Kind::Invalid;
  std::optional<market::Reject>
      error;  // set exactly when Invalid: why the whole request is refused
  std::vector<CreateItem> creates;
  std::string account;                            // Transactions: the acting account
  std::optional<market::Reject> account_invalid;  // set when it is missing or malformed
  std::vector<TransactionItem> transactions;

  // True when applying it cannot change state (only queries, or invalid).
  bool is_read_only() const;
};

}  // namespace protocol
