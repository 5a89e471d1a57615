#pragma once
// PostgreSQL, through libpqxx: the durable record of the exchange. One Database is one
// connection; it is not shared between threads.
//
// Every call is bounded: connecting by libpq's connect_timeout (see connection_bounds.hpp),
// every statement by the Watchdog. A call that outlives its limit has its socket shut down and
// throws DatabaseTimeout; the connection is then dead (usable() is false) and is dropped.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <pqxx/connection>

#include "leadership/fencing.hpp"
#include "market/engine.hpp"
#include "store/journal.hpp"
#include "store/ports.hpp"
#include "store/projection_rows.hpp"

namespace store {

// One server process (backend) of PostgreSQL: its pid, and its start time, which tells it
// from a later backend that got the same pid.
struct Backend {
  int pid = 0;
  std::string started;
};

// Which batch a commit carried: `writer` is random per server process, `batch` its count of
// batches, stamped on the batch's last journal entry, `seq`. (A seq alone would not do: a
// failed batch's seqs are used again by the next one, and another process may use them too.)
struct CommitMark {
  std::int64_t writer = 0;
  std::int64_t batch = 0;
  std::int64_t seq = 0;
};

// The row of writer_epoch: whose turn it is to write this database (leadership/writer_lock.hpp).
struct WriterEpoch {
  std::int64_t epoch = 0;
  std::string holder;  // who bumped it
  std::string since;
  // "epoch N, holder H, since T"
  std::string describe() const;
};

class Database {
 public:
  // Connects; throws std::runtime_error with libpq's reason when it cannot. `timeout` bounds
  // each later call (loading the whole state gets ten times as long).
  explicit Database(const std::string& conninfo,
                    std::chrono::milliseconds timeout = kDefaultDbTimeout);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Creates missing tables and indexes (idempotent).
  void apply_schema(const std::string& schema_sql);
  // Deletes every account, symbol, order and execution.
  void reset();
  // Fills an empty engine with the projection (the SQL tables) and returns the journal seq it
  // reflects; the journal after it is still to be replayed (app::load_state does both).
  std::int64_t load(market::Engine& engine);
  // The stored rows of those of `ids` that exist, in id order, read as load() reads the open
  // orders it hands the engine (the store contract checks what writes stored through it).
  std::vector<market::OrderRow> order_rows(const std::vector<market::OrderId>& ids);
  // Prepares the projection write; call once the schema exists.
  void prepare_writes();
  // The archive (store/archive_sql.cpp): the stored status of each of `ids` that belongs to
  // `account` (the others are absent), in one statement however many ids there are.
  std::map<market::OrderId, market::OrderStatus> find_orders(
      const std::string& account, const std::vector<market::OrderId>& ids);
  // Writes `rows` into the SQL tables in one transaction and sets projection_position to
  // `through_seq` with them (store/projection_sql.cpp): orders and executions after the
  // largest stored ids are appended with COPY, the rows that change (balances, positions,
  // orders stored before) by one statement per kRowsPerPace rows of each table, each call
  // bounded by the timeout on its own. Idempotent: a write whose seq the position has
  // reached is skipped, and ids already stored are updated, never inserted twice. Writes only
  // while projection_position's epoch, set by each writer_epoch bump, is `epoch`, holding that
  // row from its first statement to its commit (so a bump waits for the write, or ends it);
  // throws Fenced (nothing written) once it is not.
  //
  // A write is a series of steps (planned by store/projection_plan.hpp): COPYs of at most
  // kRowsPerStep rows, and after each the statements of at most kRowsPerPace changed rows per
  // table that keep the changed rows' share up with the copied rows'. As it goes, `pace` (if
  // given) is told how much of the write's work it has sent and how much there is in all (a
  // copied row counts 1, a changed row kChangedRowCost), every kRowsPerPace rows of a COPY
  // (PostgreSQL works on a COPY's rows as they arrive, a thousand at a time) and after each
  // statement, never after the last, and may pause, so that the write's CPU in PostgreSQL is
  // spread over time in small pieces instead of taking a core in bursts (store::Projector
  // spreads a large write over most of the gather interval).
  using Pace = std::function<void(std::size_t work_sent, std::size_t work_in_all)>;
  void project(const ProjectionRows& rows, std::int64_t through_seq, std::int64_t epoch,
               const Pace& pace = nullptr);
  static constexpr std::size_t kRowsPerStep = 5000;
  static constexpr std::size_t kRowsPerPace = 250;
  // What PostgreSQL spends on a changed row (an upsert or update from arrays) against a copied
  // one (measured: docs/notes/performance-history.md, "The projection's fence for the whole
  // write").
  static constexpr std::size_t kChangedRowCost = 3;
  // Whether the batch `mark` names committed: its last journal entry is there with its mark.
  // Ask only once the connection that wrote it is gone (end_backend), and only about a batch
  // not yet projected (the projection's trim could have deleted its entries otherwise).
  bool committed(const CommitMark& mark);

  // A round trip (SELECT 1): whether PostgreSQL answers on this connection. Throws if not.
  void ping();

  // Whether this connection's role is a PostgreSQL superuser (the server should not need one).
  bool superuser();

  // This connection's backend.
  Backend backend();
  // Makes sure `other` (another connection's backend) is gone, terminating it if it is
  // still there, waiting up to `wait`; true once it is gone. Until then a statement it
  // received may still commit, so its outcome cannot be read yet.
  bool end_backend(const Backend& other, std::chrono::milliseconds wait);

  // False once a call broke or timed out: the connection must be dropped.
  bool usable() const { return !broken_; }

  // The journal (store/journal_sql.cpp). Prepares write_journal; call once the schema exists.
  void prepare_journal_write();
  // Appends journal `entries`, the last one stamped with `mark`, in one statement,
  // if writer_epoch is still `epoch`. Throws on failure; nothing is stored then, unless the
  // connection broke during the commit itself: committed() tells. Throws Fenced (nothing
  // stored) if another writer's epoch is in place.
  void write_journal(const std::vector<JournalEntry>& entries, const CommitMark& mark,
                     std::int64_t epoch);
  // Up to `limit` journal entries with seq > `after`, in seq order.
  std::vector<JournalEntry> read_journal(std::int64_t after, std::int64_t limit);
  // Deletes the journal entries up to `through_seq` that the projection already holds; returns
  // how many went. Under the same fence as write_journal (throws Fenced).
  std::int64_t trim_journal(std::int64_t through_seq, std::int64_t epoch);
  // The largest journal seq (0 when empty).
  std::int64_t last_journal_seq();
  // Sets the session's application_name (lets tests see whether a projector is connected).
  void set_application_name(const std::string& name);

  // The writer epoch as stored now (store/writer_epoch_sql.cpp).
  WriterEpoch writer_epoch();

  // For a standby following the journal (store/follow_sql.cpp): the largest journal seq and
  // projection_position.seq, and up to `limit` entries with seq > `after` in seq order, all
  // from one snapshot in one statement (one round trip per poll).
  struct JournalEnd {
    std::int64_t last_seq = 0;
    std::int64_t projected_seq = 0;
  };
  struct JournalTail {
    JournalEnd end;
    std::vector<JournalEntry> entries;
  };
  JournalTail follow_journal(std::int64_t after, std::int64_t limit);

 private:
  // Runs `call` under the watchdog for `limit`; marks the connection broken if it fails or
  // the watchdog fired, and turns a fired watchdog's error into DatabaseTimeout.
  std::int64_t load_unbounded(market::Engine& engine);
  template <typename Call>
  auto bounded(const char* what, std::chrono::milliseconds limit, Call&& call);
  // The error for a write that found writer_epoch moved on from `ours`: names the writer now
  // in charge when that can still be read.
  leadership::Fenced fenced(std::int64_t ours);

  std::unique_ptr<pqxx::connection> conn_;
  std::chrono::milliseconds timeout_;
  bool broken_ = false;
};

}  // namespace store
