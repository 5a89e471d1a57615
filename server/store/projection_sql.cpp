// The projection's SQL: how store::Projector writes merged rows (ProjectionRows) into the
// tables, one transaction per write.
//
// Measured on the projector's PostgreSQL backend (docs/PERFORMANCE.md, "Per-order CPU budget"):
// rows that are new, the orders placed and the executions, cost least appended with COPY
// (PostgreSQL inserts them a page at a time, with no executor and no conflict check per row);
// rows that change, balances, positions and the orders placed earlier, are upserted or updated
// from arrays. So a write is:
//   1. the fence, and where the tables are: projection_position's row taken FOR UPDATE if it
//      still holds our writer epoch (else nothing is written: another server took over), with
//      the stored position, and the largest order and execution ids; if the position has
//      reached `through_seq` already, the write committed before (its answer was lost with a
//      broken connection) and there is nothing to do. The row lock lasts to the end of the
//      transaction, and the epoch bump updates that row, so it waits for the whole write: a
//      new leader's takeover sees every row of it or none, and finds what holds it up (a
//      paused old leader's projector keeps the rows it appended locked, and the new leader
//      appends the same ids) among the bump's blockers, which it ends
//      (leadership/writer_lock.cpp);
//   2. COPY of the orders after the largest stored id, each with the ids of its executions
//      (orders.execution_ids: how an order's fills are found, with no index on executions'
//      order columns), and of the executions after the largest stored id, kRowsPerStep rows
//      to a COPY, with `pace` told every kRowsPerPace rows so that it can spread the work;
//   3. statements of at most kRowsPerPace rows of each table, `pace` told after each: symbols,
//      accounts and positions upserted with their final values, the open amount and cancel
//      time of orders stored before (and their new executions' ids appended). Small statements
//      because one statement of all of them (about 5,000 rows a write under load) took a core
//      for tens of milliseconds at once, the largest burst left in the write: in 250-row
//      statements the replies' p99 was lower in every round (docs/PERFORMANCE.md). They go
//      between the COPYs, as many after each as keep their share of the write up with the
//      copied rows' share, the rest after the last COPY;
//   4. projection_position moved to `through_seq` if writer_epoch still holds our epoch (else
//      everything is rolled back: kFenceAndWhereTablesAre says why), and commit.
// Re-projecting is harmless: an id at or below the largest stored one is an update, never a
// second insert.
#include <algorithm>
#include <cassert>
#include <chrono>
#include <limits>
#include <optional>
#include <tuple>
#include <vector>

#include <pqxx/pqxx>

#include "store/copy_text.hpp"
#include "store/database.hpp"
#include "store/database_internal.hpp"

namespace store {
namespace {

// $1: our writer epoch. The first column is 0 when another server's bump has fenced the
// projection (schema.sql, projection_position). writer_epoch is looked at too, unlocked: a
// server of a version before projection_position.epoch bumps only writer_epoch.
const char* kFenceAndWhereTablesAre = R"SQL(
WITH fence AS MATERIALIZED (
  SELECT seq FROM projection_position
  WHERE epoch = $1 AND EXISTS (SELECT FROM writer_epoch WHERE epoch = $1) FOR UPDATE
)
SELECT (SELECT count(*) FROM fence),
       (SELECT coalesce(max(seq), 0) FROM fence),
       (SELECT coalesce(max(id), 0) FROM orders),
       (SELECT coalesce(max(id), 0) FROM executions)
)SQL";

// The rows that change, as parallel arrays (bound parameters, never spliced into SQL); an
// order stored before gets its new executions' ids appended ($12: one array literal per
// order). The transaction holds the fence already (kFenceAndWhereTablesAre).
const char* kWriteChanges = R"SQL(
WITH new_symbols AS (
  INSERT INTO symbols (sym) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING
), account_rows AS (
  INSERT INTO accounts (id, balance, deposited)
  SELECT * FROM unnest($2::text[], $3::numeric[], $4::numeric[])
  ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance
), position_rows AS (
  INSERT INTO positions (account_id, symbol, amount, granted)
  SELECT * FROM unnest($5::text[], $6::text[], $7::numeric[], $8::numeric[])
  ON CONFLICT (account_id, symbol) DO UPDATE
    SET amount = EXCLUDED.amount, granted = EXCLUDED.granted
)
UPDATE orders SET open_amount = c.open_amount, canceled_at = c.canceled_at,
                  execution_ids = orders.execution_ids || c.execution_ids::bigint[]
FROM unnest($9::bigint[], $10::numeric[], $11::bigint[], $12::text[])
  AS c (id, open_amount, canceled_at, execution_ids)
WHERE orders.id = c.id
)SQL";

// Moves the position, and says whether writer_epoch is still ours (see kFenceAndWhereTablesAre).
const char* kMovePosition = R"SQL(
UPDATE projection_position SET seq = $1
WHERE EXISTS (SELECT FROM writer_epoch WHERE epoch = $2)
)SQL";

// One statement's share of the changed rows: up to kRowsPerPace of each table.
struct Changes {
  ArrayLiteral sym;
  ArrayLiteral acc_id, acc_balance, acc_deposited;
  ArrayLiteral pos_account, pos_symbol, pos_amount, pos_granted;
  ArrayLiteral o_id, o_open, o_canceled, o_executions;
  std::size_t rows = 0;
};

// Takes up to `n` elements of [it, end) with `add`, advancing `it`; returns how many it took.
template <typename It, typename Add>
std::size_t take(It& it, It end, std::size_t n, Add add) {
  std::size_t taken = 0;
  for (; it != end && taken < n; ++it, ++taken) add(*it);
  return taken;
}

const auto kAll = [](const auto&) { return true; };

// The entries of `rows` (a hash map) that `wanted` accepts, by key.
template <typename Map, typename Wanted>
std::vector<const typename Map::value_type*> in_key_order(const Map& rows, Wanted wanted) {
  std::vector<const typename Map::value_type*> out;
  out.reserve(rows.size());
  for (const auto& entry : rows)
    if (wanted(entry)) out.push_back(&entry);
  std::sort(out.begin(), out.end(),
            [](const auto* a, const auto* b) { return a->first < b->first; });
  return out;
}

// The executions of each order, from (order, execution) pairs sorted by order, for orders
// asked in increasing id order: of() moves a cursor forward and returns the run of `id`'s pairs
// (empty if it has none).
class FillIds {
 public:
  using Pairs = std::vector<std::pair<market::OrderId, std::int64_t>>;
  using Run = std::pair<Pairs::const_iterator, Pairs::const_iterator>;

  explicit FillIds(const Pairs& pairs) : at_(pairs.begin()), end_(pairs.end()) {}

  Run of(market::OrderId id) {
    assert(id > asked_);  // the cursor only moves forward
    asked_ = id;
    while (at_ != end_ && at_->first < id) ++at_;
    const auto first = at_;
    while (at_ != end_ && at_->first == id) ++at_;
    return {first, at_};
  }

 private:
  Pairs::const_iterator at_, end_;
  market::OrderId asked_ = std::numeric_limits<market::OrderId>::min();
};

// An array literal of the executions' ids in a run ("{7,9}").
std::string ids_literal(FillIds::Pairs::const_iterator first, FillIds::Pairs::const_iterator last) {
  std::string text;
  append_int_array(text, first, last);
  return text;
}

}  // namespace

void Database::prepare_writes() {
  bounded("preparing the projection write", timeout_,
          [&] { conn_->prepare("write_changes", kWriteChanges); });
}

void Database::project(const ProjectionRows& batch, std::int64_t through_seq, std::int64_t epoch,
                       const Pace& pace) {
  std::optional<pqxx::work> transaction;
  const auto [ours, position, last_order, last_execution] =
      bounded("reading the projection's position", timeout_, [&] {
        transaction.emplace(*conn_);
        auto row = transaction->exec_params1(kFenceAndWhereTablesAre, epoch);
        return std::make_tuple(row[0].as<std::int64_t>() == 1, row[1].as<std::int64_t>(),
                               row[2].as<std::int64_t>(), row[3].as<std::int64_t>());
      });
  pqxx::work& tx = *transaction;
  if (!ours) throw fenced(epoch);       // `tx` rolls back, having changed nothing
  if (position >= through_seq) return;  // written before; `tx` rolls back, having changed nothing
  // Each order's executions in this batch, as (order, execution) pairs in that order: the
  // engine records both orders of every execution in the same request's effects, so every
  // order named here has its row in the batch. Orders are written in id order, so their fills
  // are found by a cursor moving forward (FillIds), with no map and no string per order.
  std::vector<std::pair<market::OrderId, std::int64_t>> fill_pairs;
  fill_pairs.reserve(2 * batch.executions.size());
  for (const auto& e : batch.executions) {
    if (e.id <= last_execution) continue;
    fill_pairs.emplace_back(e.buy_order, e.id);
    fill_pairs.emplace_back(e.sell_order, e.id);
  }
  std::sort(fill_pairs.begin(), fill_pairs.end());
  const auto is_stored_order = [&](const auto& entry) { return entry.first <= last_order; };

  // New orders in id order (each primary-key entry then goes to the rightmost leaf), kRowsPerStep
  // to a COPY.
  std::vector<const market::OrderRow*> new_orders;
  for (const auto& entry : batch.orders)
    if (!is_stored_order(entry)) new_orders.push_back(&entry.second);
  std::sort(new_orders.begin(), new_orders.end(),
            [](const market::OrderRow* a, const market::OrderRow* b) { return a->id < b->id; });

  // The changed rows in key order, as the primary keys have them: neighbours in an index (and,
  // for orders, on the heap, where they were appended in id order) are written one after
  // another. Orders stored before were updated a quarter faster so than in hash order.
  const auto accounts = in_key_order(batch.accounts, kAll);
  const auto positions = in_key_order(batch.positions, kAll);
  const auto stored_orders = in_key_order(batch.orders, is_stored_order);
  auto sym_it = batch.symbols.begin();
  auto acc_it = accounts.cbegin();
  auto pos_it = positions.cbegin();
  auto ord_it = stored_orders.cbegin();
  FillIds new_order_fills(fill_pairs);
  FillIds stored_order_fills(fill_pairs);
  const auto next_changes = [&] {
    const std::size_t n = kRowsPerPace;
    Changes c;
    c.rows += take(sym_it, batch.symbols.end(), n, [&](const std::string& s) { c.sym.add(s); });
    c.rows += take(acc_it, accounts.cend(), n, [&](const auto* entry) {
      const auto& row = entry->second;
      c.acc_id.add(row.id);
      c.acc_balance.add(row.balance);
      c.acc_deposited.add(row.deposited);
    });
    c.rows += take(pos_it, positions.cend(), n, [&](const auto* entry) {
      const auto& row = entry->second;
      c.pos_account.add(row.account);
      c.pos_symbol.add(row.symbol);
      c.pos_amount.add(row.amount);
      c.pos_granted.add(row.granted);
    });
    c.rows += take(ord_it, stored_orders.cend(), n, [&](const auto* entry) {
      const auto& row = entry->second;
      c.o_id.add(row.id);
      c.o_open.add(row.open);
      if (row.canceled_at)
        c.o_canceled.add(*row.canceled_at);
      else
        c.o_canceled.add_null();
      const auto ids = stored_order_fills.of(row.id);
      c.o_executions.add(ids_literal(ids.first, ids.second));
    });
    return c;
  };
  const auto more_changes = [&] {
    return sym_it != batch.symbols.end() || acc_it != accounts.cend() ||
           pos_it != positions.cend() || ord_it != stored_orders.cend();
  };

  // What this write sends, for `pace`: the new orders and executions, and the changed rows
  // weighted by what each costs PostgreSQL against a copied row.
  const std::size_t new_executions = static_cast<std::size_t>(
      std::count_if(batch.executions.begin(), batch.executions.end(),
                    [&](const market::ExecutionRow& e) { return e.id > last_execution; }));
  const std::size_t new_rows = new_orders.size() + new_executions;
  const std::size_t changed_rows =
      batch.symbols.size() + accounts.size() + positions.size() + stored_orders.size();
  const std::size_t work_in_all = new_rows + kChangedRowCost * changed_rows;
  std::size_t work_sent = 0, copied = 0, changed = 0;
  // Called as each block of rows goes into a COPY and after each statement; never after the
  // last of the write (the commit is not held back).
  const auto sent = [&](std::size_t work) {
    work_sent += work;
    if (work_sent < work_in_all && pace) pace(work_sent, work_in_all);
  };
  const auto write_changes = [&] {
    Changes c = next_changes();
    bounded("projecting changed rows", timeout_, [&] {
      tx.exec_prepared0("write_changes", c.sym.done(), c.acc_id.done(), c.acc_balance.done(),
                        c.acc_deposited.done(), c.pos_account.done(), c.pos_symbol.done(),
                        c.pos_amount.done(), c.pos_granted.done(), c.o_id.done(), c.o_open.done(),
                        c.o_canceled.done(), c.o_executions.done());
    });
    changed += c.rows;
    sent(kChangedRowCost * c.rows);
  };
  // Between COPYs, the statements of changed rows keep up with the copied rows, so that they
  // are spread through the write with the COPYs instead of coming back to back at its end
  // (where 30 % of the replies' slowest 1 % were, docs/PERFORMANCE.md).
  const auto keep_changes_up = [&] {
    while (more_changes() && changed * new_rows < copied * changed_rows) write_changes();
  };
  // Rows go into a COPY kRowsPerPace at a time (store/copy_text.hpp).
  CopyText rows;
  const auto copy_sent = [&](std::size_t n) {
    copied += n;
    sent(n);
  };
  const auto end_row = [&](pqxx::stream_to& copy) {
    rows.end_row();
    if (rows.rows() < kRowsPerPace) return;
    const std::size_t n = rows.rows();
    rows.send(copy);
    copy_sent(n);
  };
  const auto finish = [&](pqxx::stream_to& copy) {
    const std::size_t n = rows.rows();
    rows.send(copy);
    copy.complete();
    if (n > 0) copy_sent(n);
  };
  for (std::size_t from = 0; from < new_orders.size(); from += kRowsPerStep) {
    bounded("appending orders", timeout_, [&] {
      pqxx::stream_to copy(
          tx, "orders",
          std::vector<std::string>{"id", "account_id", "symbol", "amount", "limit_price",
                                   "open_amount", "created_at", "canceled_at", "execution_ids"});
      for (std::size_t i = from; i < std::min(from + kRowsPerStep, new_orders.size()); ++i) {
        const market::OrderRow& o = *new_orders[i];
        const auto ids = new_order_fills.of(o.id);
        rows.field(o.id).field(o.account).field(o.symbol).field(o.amount).field(o.limit);
        rows.field(o.open).field(o.created_at);
        if (o.canceled_at)
          rows.field(*o.canceled_at);
        else
          rows.null();
        rows.array_field(ids.first, ids.second);
        end_row(copy);
      }
      finish(copy);
    });
    keep_changes_up();
  }
  // New executions likewise (they are in id order).
  for (auto it = batch.executions.begin(); it != batch.executions.end();) {
    while (it != batch.executions.end() && it->id <= last_execution) ++it;
    if (it == batch.executions.end()) break;
    bounded("appending executions", timeout_, [&] {
      pqxx::stream_to copy(tx, "executions",
                           std::vector<std::string>{"id", "buy_order", "sell_order", "shares",
                                                    "price", "executed_at"});
      for (std::size_t n = 0; it != batch.executions.end() && n < kRowsPerStep; ++it, ++n) {
        rows.field(it->id).field(it->buy_order).field(it->sell_order).field(it->shares);
        rows.field(it->price).field(it->time);
        end_row(copy);
      }
      finish(copy);
    });
    keep_changes_up();
  }
  while (more_changes()) write_changes();
  const bool still_ours = bounded("moving the projection's position", timeout_, [&] {
    return tx.exec_params0(kMovePosition, through_seq, epoch).affected_rows() == 1;
  });
  if (!still_ours) {
    tx.abort();  // what the COPYs and statements wrote goes too
    throw fenced(epoch);
  }
  bounded("committing a projection", timeout_, [&] { tx.commit(); });
}

}  // namespace store
