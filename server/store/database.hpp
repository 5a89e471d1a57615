#pragma once
// PostgreSQL, through libpqxx: the durable record of the exchange. One Database is one
// connection; it is not shared between threads.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

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
  // Fills an empty engine with the stored state.
  void load(exchange::Engine& engine);
  // Prepares the batch write; call once the schema exists.
  void prepare_writes();
  // One stored order's status if it belongs to `account`.
  std::optional<exchange::OrderStatus> find_order(const std::string& account, exchange::OrderId id);
  // Writes a batch in one statement, hence one transaction and one round trip, and records
  // `mark` in commit_marker with it. Throws on failure; nothing of the batch is stored then,
  // unless the connection broke during the commit itself: committed() tells.
  void write(const Batch& batch, const CommitMark& mark);
  // Whether the last committed batch is `mark`. (Batches commit one at a time, in order.)
  bool committed(const CommitMark& mark);

 private:
  std::unique_ptr<pqxx::connection> conn_;
};

}  // namespace store
