#include "store/database.hpp"

#include <cctype>
#include <stdexcept>
#include <type_traits>

#include <pqxx/pqxx>

#include "store/database_internal.hpp"
#include "store/watchdog.hpp"

namespace store {
namespace {

// One statement writes the projection's rows (ProjectionRows): each table's rows travel as
// parallel arrays (bound parameters, never spliced into SQL) and are upserted by data-modifying
// CTEs. Upserts carry final values and executions are inserted once, so projecting the same
// stretch twice (a reload re-projects the journal after the stored position) is harmless. Foreign
// keys and CHECKs are verified at the end of the statement. Every part writes only while
// writer_epoch is still ours ($24), as the journal append does (journal_sql.cpp): a fenced
// projector must not overwrite the new writer's rows with its stale final values. It returns 1 if
// it wrote, 0 if fenced.
const char* kWriteProjection = R"SQL(
WITH fence AS MATERIALIZED (
  SELECT epoch FROM writer_epoch WHERE epoch = $24 FOR SHARE
), new_symbols AS (
  INSERT INTO symbols (sym) SELECT unnest($1::text[]) WHERE EXISTS (SELECT FROM fence)
  ON CONFLICT DO NOTHING
), account_rows AS (
  INSERT INTO accounts (id, balance, deposited)
  SELECT * FROM unnest($2::text[], $3::numeric[], $4::numeric[]) WHERE EXISTS (SELECT FROM fence)
  ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance
), position_rows AS (
  INSERT INTO positions (account_id, symbol, amount, granted)
  SELECT * FROM unnest($5::text[], $6::text[], $7::numeric[], $8::numeric[])
  WHERE EXISTS (SELECT FROM fence)
  ON CONFLICT (account_id, symbol) DO UPDATE
    SET amount = EXCLUDED.amount, granted = EXCLUDED.granted
), position AS (
  UPDATE projection_position SET seq = $23 WHERE EXISTS (SELECT FROM fence)
), order_rows AS (
  INSERT INTO orders (id, account_id, symbol, amount, limit_price, open_amount, created_at,
                      canceled_at)
  SELECT * FROM unnest($9::bigint[], $10::text[], $11::text[], $12::numeric[], $13::numeric[],
                       $14::numeric[], $15::bigint[], $16::bigint[])
  WHERE EXISTS (SELECT FROM fence)
  ON CONFLICT (id) DO UPDATE
    SET open_amount = EXCLUDED.open_amount, canceled_at = EXCLUDED.canceled_at
), execution_rows AS (
  INSERT INTO executions (id, buy_order, sell_order, shares, price, executed_at)
  SELECT * FROM unnest($17::bigint[], $18::bigint[], $19::bigint[], $20::numeric[],
                       $21::numeric[], $22::bigint[])
  WHERE EXISTS (SELECT FROM fence)
  ON CONFLICT (id) DO NOTHING
)
SELECT count(*) FROM fence
)SQL";

std::optional<std::int64_t> optional_int(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<std::int64_t>();
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

void Database::prepare_writes() {
  bounded("preparing the projection write", timeout_,
          [&] { conn_->prepare("write_projection", kWriteProjection); });
}

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
    tx.exec("UPDATE projection_position SET seq = 0");
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
  for (const auto& row :
       tx.exec("SELECT id, account_id, symbol, amount, limit_price, open_amount, created_at, "
               "canceled_at FROM orders WHERE canceled_at IS NULL AND open_amount > 0 ORDER BY id"))
    engine.load_order({row[0].as<std::int64_t>(), row[1].c_str(), row[2].c_str(), decimal(row[3]),
                       decimal(row[4]), decimal(row[5]), row[6].as<std::int64_t>(),
                       optional_int(row[7])});
  for (const auto& row :
       tx.exec("SELECT DISTINCT e.id, e.buy_order, e.sell_order, e.shares, e.price, e.executed_at "
               "FROM orders o JOIN executions e ON e.buy_order = o.id OR e.sell_order = o.id "
               "WHERE o.canceled_at IS NULL AND o.open_amount > 0 ORDER BY e.id"))
    engine.load_execution({row[0].as<std::int64_t>(), row[1].as<std::int64_t>(),
                           row[2].as<std::int64_t>(), decimal(row[3]), decimal(row[4]),
                           row[5].as<std::int64_t>()});
  auto next = tx.exec1(
      "SELECT (SELECT coalesce(max(id), 0) + 1 FROM orders), "
      "       (SELECT coalesce(max(id), 0) + 1 FROM executions)");
  engine.set_next_ids(next[0].as<std::int64_t>(), next[1].as<std::int64_t>());
  auto position = tx.exec1("SELECT seq FROM projection_position")[0].as<std::int64_t>();
  tx.commit();
  engine.finish_loading();
  return position;
}

bool Database::committed(const CommitMark& mark) {
  return bounded("reading commit_marker", timeout_, [&] {
    // A write, not a plain read: its commit returns only once it is as durable as any of the
    // server's commits must be (with synchronous replication, on the standby too), and WAL
    // reaches the standby in order, so a batch it finds is durable there as well. A batch whose
    // wait for the standby was cut short (our watchdog, or the old backend being terminated)
    // is committed on the primary only: reading the marker alone would acknowledge it, and a
    // failover right after would lose it.
    pqxx::work tx(*conn_);
    auto row = tx.exec1("UPDATE commit_marker SET writer = writer RETURNING writer, batch");
    tx.commit();
    return row[0].as<std::int64_t>() == mark.writer && row[1].as<std::int64_t>() == mark.batch;
  });
}

void Database::ping() {
  bounded("pinging", timeout_, [&] {
    pqxx::nontransaction tx(*conn_);
    tx.exec1("SELECT 1");
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

namespace {

// One statement's share of the rows: up to kProjectionRowsPerStatement rows taken from each
// table in turn, so rows of any number are written by statements of bounded size.
struct ProjectionChunk {
  ArrayLiteral sym;
  ArrayLiteral acc_id, acc_balance, acc_deposited;
  ArrayLiteral pos_account, pos_symbol, pos_amount, pos_granted;
  ArrayLiteral o_id, o_account, o_symbol, o_amount, o_limit, o_open, o_created, o_canceled;
  ArrayLiteral e_id, e_buy, e_sell, e_shares, e_price, e_time;

  void add(const std::string& symbol) { sym.add(symbol); }
  void add(const market::AccountRow& row) {
    acc_id.add(row.id);
    acc_balance.add(row.balance);
    acc_deposited.add(row.deposited);
  }
  void add(const market::PositionRow& row) {
    pos_account.add(row.account);
    pos_symbol.add(row.symbol);
    pos_amount.add(row.amount);
    pos_granted.add(row.granted);
  }
  void add(const market::OrderRow& row) {
    o_id.add(row.id);
    o_account.add(row.account);
    o_symbol.add(row.symbol);
    o_amount.add(row.amount);
    o_limit.add(row.limit);
    o_open.add(row.open);
    o_created.add(row.created_at);
    if (row.canceled_at)
      o_canceled.add(*row.canceled_at);
    else
      o_canceled.add_null();
  }
  void add(const market::ExecutionRow& row) {
    e_id.add(row.id);
    e_buy.add(row.buy_order);
    e_sell.add(row.sell_order);
    e_shares.add(row.shares);
    e_price.add(row.price);
    e_time.add(row.time);
  }
  // A keyed row (a map's entry) by its value.
  template <typename Key, typename Row>
  void add(const std::pair<const Key, Row>& entry) {
    add(entry.second);
  }
};

// One table's rows not yet in a chunk.
template <typename Rows>
struct Remaining {
  typename Rows::const_iterator it, end;
  explicit Remaining(const Rows& rows) : it(rows.begin()), end(rows.end()) {}
  bool more() const { return it != end; }
  // Takes up to `n` rows into `chunk`.
  void take(ProjectionChunk& chunk, std::size_t n) {
    for (; it != end && n > 0; ++it, --n) chunk.add(*it);
  }
};

}  // namespace

void Database::project(const ProjectionRows& rows, std::int64_t through_seq, std::int64_t epoch) {
  Remaining symbols(rows.symbols);
  Remaining accounts(rows.accounts);
  Remaining positions(rows.positions);
  Remaining orders(rows.orders);
  Remaining executions(rows.executions);
  auto more = [&] {
    return symbols.more() || accounts.more() || positions.more() || orders.more() ||
           executions.more();
  };
  auto next_chunk = [&] {
    const std::size_t n = kProjectionRowsPerStatement;
    ProjectionChunk c;
    symbols.take(c, n);
    accounts.take(c, n);
    positions.take(c, n);
    orders.take(c, n);
    executions.take(c, n);
    return c;
  };
  // Whether the statement wrote (false: writer_epoch has moved on, and it wrote nothing).
  auto write = [&](pqxx::transaction_base& tx, ProjectionChunk& c) {
    return tx.exec_prepared1("write_projection", c.sym.done(), c.acc_id.done(),
                             c.acc_balance.done(), c.acc_deposited.done(), c.pos_account.done(),
                             c.pos_symbol.done(), c.pos_amount.done(), c.pos_granted.done(),
                             c.o_id.done(), c.o_account.done(), c.o_symbol.done(),
                             c.o_amount.done(), c.o_limit.done(), c.o_open.done(),
                             c.o_created.done(), c.o_canceled.done(), c.e_id.done(), c.e_buy.done(),
                             c.e_sell.done(), c.e_shares.done(), c.e_price.done(), c.e_time.done(),
                             through_seq, epoch)[0]
               .as<std::int64_t>() == 1;
  };

  ProjectionChunk chunk = next_chunk();
  if (!more()) {
    // The usual case: a single statement outside BEGIN/COMMIT is its own transaction, one
    // round trip per write.
    const bool ours = bounded("writing the projection", timeout_, [&] {
      pqxx::nontransaction tx(*conn_);
      return write(tx, chunk);
    });
    if (!ours) throw fenced(epoch);
    return;
  }
  // Many rows (a large sweep, a long backlog): several statements, each bounded by the timeout
  // on its own, in one transaction, so the tables still move from one journal seq to another
  // at once. A fenced part rolls the whole transaction back when `tx` goes out of scope
  // unfinished.
  auto tx = std::make_unique<pqxx::work>(*conn_);
  for (int part = 1;; ++part) {
    const std::string what = "writing the projection (part " + std::to_string(part) + ")";
    if (!bounded(what.c_str(), timeout_, [&] { return write(*tx, chunk); })) throw fenced(epoch);
    if (!more()) break;
    chunk = next_chunk();
  }
  bounded("committing a projection", timeout_, [&] { tx->commit(); });
}

}  // namespace store
