// The projection's SQL: how store::Projector writes merged rows (ProjectionRows) into the
// tables, one transaction per write, carrying out the plan that store/projection_plan.hpp makes
// of them (which rows go in which COPY or statement, and in which order).
//
// New rows, the orders placed and the executions, cost PostgreSQL least appended with COPY (it
// inserts them a page at a time, with no executor and no conflict check per row); rows that
// change, balances, positions and the orders placed earlier, are upserted or updated from
// arrays (docs/notes/performance-history.md, "Per-order CPU budget, before and after issue 21").
// So a write is:
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
//   2. the plan's steps in order: COPYs of new orders, each with the ids of its executions
//      (orders.execution_ids: how an order's fills are found, with no index on executions'
//      order columns), and of new executions, `pace` told every kRowsPerPace rows so that it
//      can spread the work; statements of changed rows (kWriteChanges), each after the
//      statement of the revised orders among them if there are any (kWriteRevisions: only
//      writes with a <replace> or a stop's trigger send it), `pace` told after each;
//      never after the last of the write (the commit is not held back);
//   3. projection_position moved to `through_seq` if writer_epoch still holds our epoch (else
//      everything is rolled back: kFenceAndWhereTablesAre says why), and commit.
// Re-projecting is harmless: an id at or below the largest stored one is an update, never a
// second insert.
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include <pqxx/pqxx>

#include "store/copy_text.hpp"
#include "store/database.hpp"
#include "store/database_internal.hpp"
#include "store/projection_plan.hpp"

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

// Orders stored before whose amount, limit, priority or stop changed (OrderRow::revised), as
// parallel arrays; a NULL limit is a market order's, a NULL stop no waiting stop. Sent before
// the kWriteChanges statement that holds the same orders, and with their open amount: the
// CHECK open_amount <= abs(amount) holds for the row as each UPDATE leaves it, and a <replace>
// may move both (a larger remainder than the old amount, or a smaller amount than the old
// remainder), so they change together here. kWriteChanges then writes the same open amount
// again, with the cancel time and the new executions' ids.
const char* kWriteRevisions = R"SQL(
UPDATE orders SET amount = r.amount, limit_price = r.limit_price, open_amount = r.open_amount,
                  priority = r.priority, stop_price = r.stop_price
FROM unnest($1::bigint[], $2::numeric[], $3::numeric[], $4::numeric[], $5::bigint[],
            $6::numeric[])
  AS r (id, amount, limit_price, open_amount, priority, stop_price)
WHERE orders.id = r.id
)SQL";

// Moves the position (and the engine's next priority with it), and says whether writer_epoch
// is still ours (see kFenceAndWhereTablesAre).
const char* kMovePosition = R"SQL(
UPDATE projection_position SET seq = $1, next_priority = greatest(next_priority, $3)
WHERE EXISTS (SELECT FROM writer_epoch WHERE epoch = $2)
)SQL";

// One statement's arrays: a ChangeStep's rows.
struct Changes {
  ArrayLiteral sym;
  ArrayLiteral acc_id, acc_balance, acc_deposited;
  ArrayLiteral pos_account, pos_symbol, pos_amount, pos_granted;
  ArrayLiteral o_id, o_open, o_canceled, o_executions;
};

// An array literal of the execution ids in `run` of the plan's fills ("{7,9}").
std::string ids_literal(const ProjectionPlan& plan, RowRange run) {
  std::string text;
  append_int_array(text, plan.fills.begin() + run.first, plan.fills.begin() + run.last);
  return text;
}

// The arrays of `step`'s rows: symbols, accounts and positions with their final values, orders
// stored before with their open amount, cancel time and new executions' ids.
Changes changes_of(const ProjectionPlan& plan, const ChangeStep& step) {
  Changes c;
  for (std::size_t i = step.symbols.first; i < step.symbols.last; ++i) c.sym.add(*plan.symbols[i]);
  for (std::size_t i = step.accounts.first; i < step.accounts.last; ++i) {
    const market::AccountRow& row = *plan.accounts[i];
    c.acc_id.add(row.id);
    c.acc_balance.add(row.balance);
    c.acc_deposited.add(row.deposited);
  }
  for (std::size_t i = step.positions.first; i < step.positions.last; ++i) {
    const market::PositionRow& row = *plan.positions[i];
    c.pos_account.add(row.account);
    c.pos_symbol.add(row.symbol);
    c.pos_amount.add(row.amount);
    c.pos_granted.add(row.granted);
  }
  for (std::size_t i = step.orders.first; i < step.orders.last; ++i) {
    const market::OrderRow& row = *plan.stored_orders[i];
    c.o_id.add(row.id);
    c.o_open.add(row.open);
    if (row.canceled_at)
      c.o_canceled.add(*row.canceled_at);
    else
      c.o_canceled.add_null();
    c.o_executions.add(ids_literal(plan, plan.stored_order_fills[i]));
  }
  return c;
}

// One statement's arrays of revised orders: a ChangeStep's `revised`.
struct Revisions {
  ArrayLiteral id, amount, limit, open, priority, stop;
};

Revisions revisions_of(const ProjectionPlan& plan, RowRange revised) {
  Revisions r;
  for (std::size_t i = revised.first; i < revised.last; ++i) {
    const market::OrderRow& row = *plan.revised_orders[i];
    r.id.add(row.id);
    r.amount.add(row.amount);
    if (row.limit.is_zero())
      r.limit.add_null();  // a market order
    else
      r.limit.add(row.limit);
    r.open.add(row.open);
    r.priority.add(row.priority);
    if (row.stop)
      r.stop.add(*row.stop);
    else
      r.stop.add_null();
  }
  return r;
}

// One statement of revised orders (kWriteRevisions, prepared by prepare_writes).
void write_revisions(pqxx::work& tx, Revisions& r) {
  tx.exec_prepared0("write_revisions", r.id.done(), r.amount.done(), r.limit.done(), r.open.done(),
                    r.priority.done(), r.stop.done());
}

// One statement of changed rows (kWriteChanges, prepared by prepare_writes).
void write_changes(pqxx::work& tx, Changes& c) {
  tx.exec_prepared0("write_changes", c.sym.done(), c.acc_id.done(), c.acc_balance.done(),
                    c.acc_deposited.done(), c.pos_account.done(), c.pos_symbol.done(),
                    c.pos_amount.done(), c.pos_granted.done(), c.o_id.done(), c.o_open.done(),
                    c.o_canceled.done(), c.o_executions.done());
}

// How much of the write's work has gone to PostgreSQL, told to `pace` as it grows, but not
// once all of it has (the commit is not held back).
class Progress {
 public:
  Progress(std::size_t in_all, const Database::Pace& pace) : in_all_(in_all), pace_(pace) {}

  void sent(std::size_t work) {
    sent_ += work;
    if (sent_ < in_all_ && pace_) pace_(sent_, in_all_);
  }

 private:
  const std::size_t in_all_;
  const Database::Pace& pace_;
  std::size_t sent_ = 0;
};

// A COPY's rows go to PostgreSQL kRowsPerPace at a time (store/copy_text.hpp), each block
// told to `progress` once sent.
class CopySender {
 public:
  CopySender(pqxx::stream_to& copy, CopyText& text, Progress& progress)
      : copy_(copy), text_(text), progress_(progress) {}

  CopyText& row() { return text_; }
  void end_row() {
    text_.end_row();
    if (text_.rows() < Database::kRowsPerPace) return;
    const std::size_t n = text_.rows();
    text_.send(copy_);
    progress_.sent(n);
  }
  // Sends the rest and ends the COPY.
  void finish() {
    const std::size_t n = text_.rows();
    text_.send(copy_);
    copy_.complete();
    if (n > 0) progress_.sent(n);
  }

 private:
  pqxx::stream_to& copy_;
  CopyText& text_;
  Progress& progress_;
};

// One COPY of `rows` of the plan's new orders, each with the ids of its new executions.
void copy_orders(pqxx::work& tx, const ProjectionPlan& plan, RowRange rows, CopyText& text,
                 Progress& progress) {
  pqxx::stream_to copy(tx, "orders",
                       std::vector<std::string>{
                           "id", "account_id", "symbol", "amount", "limit_price", "open_amount",
                           "created_at", "canceled_at", "execution_ids", "priority", "stop_price"});
  CopySender sender(copy, text, progress);
  for (std::size_t i = rows.first; i < rows.last; ++i) {
    const market::OrderRow& o = *plan.new_orders[i];
    const RowRange fills = plan.new_order_fills[i];
    CopyText& row = sender.row();
    row.field(o.id).field(o.account).field(o.symbol).field(o.amount);
    if (o.limit.is_zero())
      row.null();  // a market order
    else
      row.field(o.limit);
    row.field(o.open).field(o.created_at);
    if (o.canceled_at)
      row.field(*o.canceled_at);
    else
      row.null();
    row.array_field(plan.fills.begin() + fills.first, plan.fills.begin() + fills.last);
    row.field(o.priority);
    if (o.stop)
      row.field(*o.stop);
    else
      row.null();
    sender.end_row();
  }
  sender.finish();
}

// One COPY of `rows` of the batch's executions.
void copy_executions(pqxx::work& tx, const std::vector<market::ExecutionRow>& executions,
                     RowRange rows, CopyText& text, Progress& progress) {
  pqxx::stream_to copy(
      tx, "executions",
      std::vector<std::string>{"id", "buy_order", "sell_order", "shares", "price", "executed_at"});
  CopySender sender(copy, text, progress);
  for (std::size_t i = rows.first; i < rows.last; ++i) {
    const market::ExecutionRow& e = executions[i];
    sender.row().field(e.id).field(e.buy_order).field(e.sell_order).field(e.shares);
    sender.row().field(e.price).field(e.time);
    sender.end_row();
  }
  sender.finish();
}

}  // namespace

void Database::prepare_writes() {
  // libpqxx 6 sends a statement to PostgreSQL at its first use: a connection whose writes
  // have no revised order never sends write_revisions at all.
  bounded("preparing the projection write", timeout_, [&] {
    conn_->prepare("write_changes", kWriteChanges);
    conn_->prepare("write_revisions", kWriteRevisions);
  });
}

void Database::project(const ProjectionRows& batch, std::int64_t through_seq, std::int64_t epoch,
                       const Pace& pace) {
  std::optional<pqxx::work> transaction;
  const auto [ours, position, stored] = bounded("reading the projection's position", timeout_, [&] {
    transaction.emplace(*conn_);
    auto row = transaction->exec_params1(kFenceAndWhereTablesAre, epoch);
    return std::make_tuple(row[0].as<std::int64_t>() == 1, row[1].as<std::int64_t>(),
                           StoredIds{row[2].as<std::int64_t>(), row[3].as<std::int64_t>()});
  });
  pqxx::work& tx = *transaction;
  if (!ours) throw fenced(epoch);       // `tx` rolls back, having changed nothing
  if (position >= through_seq) return;  // written before; `tx` rolls back, having changed nothing

  const ProjectionPlan plan =
      plan_projection(batch, stored, {kRowsPerStep, kRowsPerPace, kChangedRowCost});
  Progress progress(plan.work_in_all, pace);
  CopyText text;  // one buffer for every COPY of the write
  for (const ProjectionStep& step : plan.steps) {
    if (const auto* copy = std::get_if<CopyStep>(&step)) {
      if (copy->table == CopyStep::Table::orders)
        bounded("appending orders", timeout_,
                [&] { copy_orders(tx, plan, copy->rows, text, progress); });
      else
        bounded("appending executions", timeout_,
                [&] { copy_executions(tx, batch.executions, copy->rows, text, progress); });
    } else {
      const auto& change = std::get<ChangeStep>(step);
      if (change.revised.size() > 0) {
        Revisions r = revisions_of(plan, change.revised);
        bounded("projecting revised orders", timeout_, [&] { write_revisions(tx, r); });
      }
      Changes c = changes_of(plan, change);
      bounded("projecting changed rows", timeout_, [&] { write_changes(tx, c); });
      progress.sent(change.work);
    }
  }
  const bool still_ours = bounded("moving the projection's position", timeout_, [&] {
    return tx.exec_params0(kMovePosition, through_seq, epoch, batch.next_priority)
               .affected_rows() == 1;
  });
  if (!still_ours) {
    tx.abort();  // what the COPYs and statements wrote goes too
    throw fenced(epoch);
  }
  bounded("committing a projection", timeout_, [&] { tx.commit(); });
}

}  // namespace store
