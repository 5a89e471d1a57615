#include "support/test_database.hpp"

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "support/environment.hpp"

namespace testing_support {

std::string database_url() { return env_or_skip("EXCHANGE_TEST_DATABASE_URL"); }

pqxx::connection connect_database() { return pqxx::connection(database_url()); }

bool wait_for_projection(std::chrono::milliseconds at_most) {
  auto deadline = std::chrono::steady_clock::now() + at_most;
  auto conn = connect_database();
  // Everything journaled when the wait starts; under load the journal keeps growing.
  long long target = 0;
  try {
    pqxx::nontransaction tx(conn);
    target = tx.exec1("SELECT coalesce(max(seq), 0) FROM journal")[0].as<long long>();
  } catch (const std::exception&) {
    return true;  // no journal yet: nothing to wait for
  }
  auto last_seen = std::chrono::steady_clock::now();
  for (;;) {
    pqxx::nontransaction tx(conn);
    auto row = tx.exec1(
        "SELECT (SELECT seq FROM projection_position), "
        "       EXISTS (SELECT 1 FROM pg_stat_activity "
        "               WHERE application_name = 'exchange-projector')");
    if (row[0].as<long long>() >= target) return true;
    // A projector reconnecting after a failed write is briefly absent; a second without one
    // means no server is running.
    auto now = std::chrono::steady_clock::now();
    if (row[1].as<bool>()) last_seen = now;
    if (now - last_seen > std::chrono::seconds(1) || now >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::vector<std::string> conservation_violations() {
  wait_for_projection();
  auto conn = connect_database();
  pqxx::work tx(conn);
  std::vector<std::string> out;
  auto cash = tx.exec1(
      "SELECT d, h, d = h FROM (SELECT "
      "  (SELECT coalesce(sum(deposited), 0) FROM accounts) AS d, "
      "  (SELECT coalesce(sum(balance), 0) FROM accounts) + "
      "  (SELECT coalesce(sum(open_amount * limit_price), 0) FROM orders "
      "    WHERE amount > 0 AND canceled_at IS NULL) AS h) t");
  if (!cash[2].as<bool>())
    out.push_back(std::string("cash: deposited ") + cash[0].c_str() + " but held+reserved " +
                  cash[1].c_str());
  for (const auto& row : tx.exec(
           "SELECT s.sym, coalesce(g.granted, 0), coalesce(g.held, 0) + coalesce(o.reserved, 0) "
           "FROM symbols s "
           "LEFT JOIN (SELECT symbol, sum(granted) AS granted, sum(amount) AS held "
           "           FROM positions GROUP BY symbol) g ON g.symbol = s.sym "
           "LEFT JOIN (SELECT symbol, sum(open_amount) AS reserved FROM orders "
           "           WHERE amount < 0 AND canceled_at IS NULL GROUP BY symbol) o "
           "       ON o.symbol = s.sym "
           "WHERE coalesce(g.granted, 0) <> coalesce(g.held, 0) + coalesce(o.reserved, 0)"))
    out.push_back(std::string("shares of ") + row[0].c_str() + ": created " + row[1].c_str() +
                  " but held+reserved " + row[2].c_str());
  for (const auto& row :
       tx.exec("SELECT 'account ' || id FROM accounts WHERE balance < 0 UNION ALL "
               "SELECT 'position ' || account_id || '/' || symbol FROM positions "
               "WHERE amount < 0"))
    out.push_back(std::string("negative: ") + row[0].c_str());
  return out;
}

std::string query_value(const std::string& sql) {
  wait_for_projection();
  auto conn = connect_database();
  pqxx::work tx(conn);
  auto r = tx.exec1(sql);
  return r[0].is_null() ? "NULL" : r[0].c_str();
}

std::string query_value_now(const std::string& sql) {
  auto conn = connect_database();
  pqxx::nontransaction tx(conn);
  auto r = tx.exec1(sql);
  return r[0].is_null() ? "NULL" : r[0].c_str();
}

const char* const kFillsMatchOrders =
    "SELECT count(*) FROM orders o WHERE abs(o.amount) - o.open_amount <> "
    "coalesce((SELECT sum(shares) FROM executions e WHERE e.id = ANY(o.execution_ids) "
    "AND (e.buy_order = o.id OR e.sell_order = o.id)), 0)";

}  // namespace testing_support
