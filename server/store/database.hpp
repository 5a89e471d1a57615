#pragma once
// PostgreSQL, through libpqxx: the durable record of the exchange. One Database is one
// connection; it is not shared between threads.
#include <memory>
#include <optional>
#include <string>

#include <pqxx/connection>

#include "exchange/engine.hpp"
#include "store/batch.hpp"

namespace store {

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
  // Writes a batch in one statement, hence one transaction and one round trip. Throws on
  // failure, in which case nothing of the batch is stored.
  void write(const Batch& batch);

 private:
  std::unique_ptr<pqxx::connection> conn_;
};

}  // namespace store
