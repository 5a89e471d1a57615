#include "store/database.hpp"

#include <cctype>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <pqxx/pqxx>

#include "store/database_internal.hpp"
#include "store/watchdog.hpp"

namespace store {
namespace {

std::optional<std::int64_t> optional_int(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<std::int64_t>();
}

std::optional<market::Decimal> optional_decimal(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return decimal(f);
}

// Orders as OrderRows (order_row), a WHERE clause to follow. A row from before priorities were
// stored has none: its priority is its id (schema.sql).
const std::string kOrderRows =
    "SELECT id, account_id, symbol, amount, limit_price, open_amount, created_at, canceled_at, "
    "coalesce(priority, id), stop_price FROM orders ";
// The open orders, in id order.
const std::string kOpenOrders =
    kOrderRows + "WHERE canceled_at IS NULL AND open_amount > 0 ORDER BY id";
// The orders of an array of ids, in id order.
const std::string kOrdersById = kOrderRows + "WHERE id = ANY($1::bigint[]) ORDER BY id";

// A row of kOpenOrders or kOrdersById. A NULL limit (a market order's; none stays open) is a zero
// Decimal, as the engine writes it; `revised` is false: the row is as stored.
market::OrderRow order_row(const pqxx::row& row) {
  market::OrderRow o;
  o.id = row[0].as<std::int64_t>();
  o.account = row[1].c_str();
  o.symbol = row[2].c_str();
  o.amount = decimal(row[3]);
  o.limit = row[4].is_null() ? market::Decimal() : decimal(row[4]);
  o.open = decimal(row[5]);
  o.created_at = row[6].as<std::int64_t>();
  o.canceled_at = optional_int(row[7]);
  o.priority = row[8].as<std::int64_t>();
  o.stop = optional_decimal(row[9]);
  return o;
}

}  // namespace

Database::Database(const std::string& conninfo, std::chrono::milliseconds timeout)
    : timeout_(timeout) {
  try {
    conn_ = std::make_unique<pqxx::connection>(conninfo);
  } catch (const std::exception& e) {
    // libpq's message ends in a newline (and may span lines); keep the log one entry per line.
    std::string why = e.what();
    while (!why.empty() && std::isspace(static_cast<unsigned char>(why.back()))) why.pop_back();
    for (auto& c : why)
      if (c == '\n' || c == '\t') c = ' ';
    throw std::runtime_error("cannot connect to PostgreSQL: " + why);
  }
}

Database::~Database() = default;

void Database::apply_schema(const std::string& schema_sql) {
  bounded("applying the schema", timeout_ * 10, [&] {
    pqxx::work tx(*conn_);
    // Two servers starting at once must not race on CREATE TABLE IF NOT EXISTS.
    tx.exec("SELECT pg_advisory_xact_lock(12345)");
    tx.exec(schema_sql);
    tx.commit();
  });
}

void Database::reset() {
  bounded("resetting", timeout_ * 10, [&] {
    pqxx::work tx(*conn_);
    tx.exec("TRUNCATE executions, orders, positions, symbols, accounts, journal");
    tx.exec("UPDATE projection_position SET seq = 0, next_priority = 0");
    tx.commit();
  });
}

std::int64_t Database::load(market::Engine& engine) {
  // Reading the whole projection takes longer than a commit, legitimately.
  return bounded("loading the state", timeout_ * 10, [&] { return load_unbounded(engine); });
}

std::int64_t Database::load_unbounded(market::Engine& engine) {
  // One snapshot for all tables, so the state loaded is one the server once committed.
  pqxx::transaction<pqxx::repeatable_read, pqxx::read_only> tx(*conn_);
  for (const auto& row : tx.exec("SELECT sym FROM symbols")) engine.load_symbol(row[0].c_str());
  for (const auto& row : tx.exec("SELECT id, balance, deposited FROM accounts"))
    engine.load_account({row[0].c_str(), decimal(row[1]), decimal(row[2])});
  for (const auto& row : tx.exec("SELECT account_id, symbol, amount, granted FROM positions"))
    engine.load_position({row[0].c_str(), row[1].c_str(), decimal(row[2]), decimal(row[3])});
  // Closed orders stay in the database (OrderArchive answers queries about them); only open
  // ones, and their fills, come back into memory.
  for (const auto& row : tx.exec(kOpenOrders)) engine.load_order(order_row(row));
  for (const auto& row :
       tx.exec("SELECT DISTINCT e.id, e.buy_order, e.sell_order, e.shares, e.price, e.executed_at "
               "FROM orders o JOIN executions e ON e.id = ANY(o.execution_ids) "
               "WHERE o.canceled_at IS NULL AND o.open_amount > 0 ORDER BY e.id"))
    engine.load_execution({row[0].as<std::int64_t>(), row[1].as<std::int64_t>(),
                           row[2].as<std::int64_t>(), decimal(row[3]), decimal(row[4]),
                           row[5].as<std::int64_t>()});
  auto next = tx.exec1(
      "SELECT (SELECT coalesce(max(id), 0) + 1 FROM orders), "
      "       (SELECT coalesce(max(id), 0) + 1 FROM executions)");
  auto position = tx.exec1("SELECT seq, next_priority FROM projection_position");
  engine.set_next_ids(next[0].as<std::int64_t>(), next[1].as<std::int64_t>(),
                      position[1].as<std::int64_t>());
  tx.commit();
  engine.finish_loading();
  return position[0].as<std::int64_t>();
}

std::vector<market::OrderRow> Database::order_rows(const std::vector<market::OrderId>& ids) {
  ArrayLiteral id_array;
  for (market::OrderId id : ids) id_array.add(id);
  return bounded("reading order rows", timeout_, [&] {
    pqxx::nontransaction tx(*conn_);
    std::vector<market::OrderRow> rows;
    for (const auto& row : tx.exec_params(kOrdersById, id_array.done()))
      rows.push_back(order_row(row));
    return rows;
  });
}

bool Database::committed(const CommitMark& mark) {
  return bounded("asking whether a batch committed", timeout_, [&] {
    // A write, not a plain read: its commit returns only once it is as durable as any of the
    // server's commits must be (with synchronous replication, on the standby too), and WAL
    // reaches the standby in order, so a batch it finds is durable there as well. A batch whose
    // wait for the standby was cut short (our watchdog, or the old backend being terminated)
    // is committed on the primary only: reading the row alone would acknowledge it, and a
    // failover right after would lose it. A batch it does not find needs no such wait: the old
    // backend is gone, so nothing of it can still commit.
    pqxx::work tx(*conn_);
    auto rows = tx.exec_params(
        "UPDATE journal SET writer = writer WHERE seq = $1 AND writer = $2 AND batch = $3 "
        "RETURNING 1",
        mark.seq, mark.writer, mark.batch);
    tx.commit();
    return rows.size() == 1;
  });
}

void Database::ping() {
  bounded("pinging", timeout_, [&] {
    pqxx::nontransaction tx(*conn_);
    tx.exec1("SELECT 1");
  });
}

bool Database::superuser() {
  return bounded("reading the role", timeout_, [&] {
    pqxx::nontransaction tx(*conn_);
    return tx.exec1("SELECT current_setting('is_superuser')")[0].as<std::string>() == "on";
  });
}

Backend Database::backend() {
  return bounded("identifying the backend", timeout_, [&] {
    pqxx::nontransaction tx(*conn_);
    auto row = tx.exec1(
        "SELECT pid, backend_start::text FROM pg_stat_activity WHERE pid = pg_backend_pid()");
    return Backend{row[0].as<int>(), row[1].c_str()};
  });
}

bool Database::end_backend(const Backend& other, std::chrono::milliseconds wait) {
  return bounded("ending the old backend", timeout_ + wait, [&] {
    pqxx::nontransaction tx(*conn_);
    // No row: it is gone already. pg_terminate_backend(pid, timeout) waits for it to exit
    // and is false if it is still there when the time is up.
    auto rows = tx.exec_params(
        "SELECT pg_terminate_backend(pid, $3) FROM pg_stat_activity "
        "WHERE pid = $1 AND backend_start = $2::timestamptz",
        other.pid, other.started, static_cast<std::int64_t>(wait.count()));
    return rows.empty() || rows[0][0].as<bool>();
  });
}

}  // namespace store
