// The order archive's SQL: the statuses of closed orders the engine no longer keeps in memory,
// read for a whole request at once.
#include <pqxx/pqxx>

#include "store/database.hpp"
#include "store/database_internal.hpp"

namespace store {
namespace {

// Every asked-for order of the account with each of its fills, one row per (order, fill) and
// one row with NULL fill columns for an order without fills, fills oldest first. One statement
// outside BEGIN/COMMIT: one round trip and one snapshot, so an order's row and its fills agree
// (the projector writes them together). The ids travel as one array parameter; an id of another
// account matches no row, and its executions are never read.
const char* kFindOrders = R"SQL(
SELECT o.id, o.open_amount, o.canceled_at, e.shares, e.price, e.executed_at
FROM orders o
LEFT JOIN LATERAL (
  SELECT id, shares, price, executed_at FROM executions WHERE id = ANY(o.execution_ids)
) e ON true
WHERE o.id = ANY($1::bigint[]) AND o.account_id = $2
ORDER BY o.id, e.id
)SQL";

}  // namespace

std::map<market::OrderId, market::OrderStatus> Database::find_orders(
    const std::string& account, const std::vector<market::OrderId>& ids) {
  ArrayLiteral id_array;
  for (market::OrderId id : ids) id_array.add(id);
  return bounded("reading archived orders", timeout_, [&] {
    pqxx::nontransaction tx(*conn_);
    std::map<market::OrderId, market::OrderStatus> found;
    for (const auto& row : tx.exec_params(kFindOrders, id_array.done(), account)) {
      const market::OrderId id = row[0].as<std::int64_t>();
      auto [at, first_row] = found.try_emplace(id);
      market::OrderStatus& status = at->second;
      if (first_row) {
        status.id = id;
        // open_amount is what is still open or, once canceled, what the cancel took.
        if (row[2].is_null()) {
          status.open = decimal(row[1]);
        } else {
          status.canceled_shares = decimal(row[1]);
          status.canceled_at = row[2].as<std::int64_t>();
        }
      }
      if (!row[3].is_null())
        status.fills.push_back({decimal(row[3]), decimal(row[4]), row[5].as<std::int64_t>()});
    }
    return found;
  });
}

}  // namespace store
