#pragma once
// PostgreSQL, through libpqxx: the durable record of the exchange. One Database is one
// connection; it is not shared between threads.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <pqxx/connection>

#include "exchange/engine.hpp"
#include "store/batch.hpp"

namespace store {

// Which batch a commit carried: `writer` is random per server process, `batch` its sequence.
struct CommitMark {
  std::int64_t writer = 0;
  std::int64_t batch = 0;
};

class Database {
 public:
  // Connects; throws std::runtime_error with libpq's reason when it cannot.
  explicit Database(const std::string& conninfo);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Creates missing tables and indexes (idempotent).
  void apply_schema(const std::string& schema_sql);
  // Deletes every account, symbol, order and execution.
  void reset();
  // Fills an empty engine with the projection (the SQL tables) and returns the journal seq it
  // reflects; the journal after it is still to be replayed (app::load_state does both).
  std::int64_t load(exchange::Engine& engine);
  // Prepares the projection write; call once the schema exists.
  void prepare_writes();
  // One stored order's status if it belongs to `account`.
  std::optional<exchange::OrderStatus> find_order(const std::string& account, exchange::OrderId id);
  // Projects a batch's effects into the SQL tables in one statement (one transaction, one
  // round trip) and sets projection_position to `through_seq` with them. Idempotent: rows
  // carry final values and executions already stored are skipped, so re-projecting is safe.
  void project(const Batch& batch, std::int64_t through_seq);
  // Whether the last committed batch is `mark`. (Batches commit one at a time, in order.)
  bool committed(const CommitMark& mark);

  // The journal (store/journal_sql.cpp). Prepares write_journal; call once the schema exists.
  void prepare_journal_write();
  // Appends the batch's journal rows and records `mark` in commit_marker, in one statement.
  // Throws on failure; nothing is stored then, unless the connection broke during the commit
  // itself: committed() tells.
  void write_journal(const Batch& batch, const CommitMark& mark);
  // Up to `limit` journal entries with seq > `after`, in seq order.
  std::vector<JournalEntry> read_journal(std::int64_t after, std::int64_t limit);
  // The largest journal seq (0 when empty).
  std::int64_t last_journal_seq();
  // Sets the session's application_name (lets tests see whether a projector is connected).
  void set_application_name(const std::string& name);

 private:
  std::unique_ptr<pqxx::connection> conn_;
};

}  // namespace store
