#pragma once
// The real PostgreSQL that ./test.sh starts, reached through EXCHANGE_TEST_DATABASE_URL.
#include <chrono>
#include <string>
#include <vector>

#include <pqxx/pqxx>

namespace testing_support {

// The connection string; a test that needs it skips (exit 77) when it is not set.
std::string database_url();
// A fresh connection for assertions on stored state.
pqxx::connection connect_database();

// The SQL tables are a projection of the journal that a running server's projector writes
// shortly after each commit: waits until they have caught up with the journal, or no
// projector is connected (no server running), or `at_most` passed. True if caught up with
// the journal as it was when the wait began.
bool wait_for_projection(std::chrono::milliseconds at_most = std::chrono::seconds(20));

// Both of these wait_for_projection() first.
// PROTOCOL.md section 6, checked on the stored state: for every symbol, shares in positions
// plus shares reserved by open sells equal shares ever created; cash in balances plus cash
// reserved by open buys equals cash ever deposited. Returns one line per violation.
std::vector<std::string> conservation_violations();

// A single number from a query, as text.
std::string query_value(const std::string& sql);

// The same straight from the database, without waiting for the projection (while a server is
// writing, or for what is not in the projection), outside a transaction: a statement that
// writes takes effect. "NULL" for a null value.
std::string query_value_now(const std::string& sql);

// Every order's executed shares match its stored fills, on both sides: query_value() of it is
// "0".
extern const char* const kFillsMatchOrders;

}  // namespace testing_support
