#pragma once
// The group commit's connection. A write that fails drops the connection, so the next batch
// starts on a fresh one: the server reconnects on its own after PostgreSQL restarts.
#include <memory>
#include <string>

#include "store/batch.hpp"
#include "store/database.hpp"

namespace store {

class BatchWriter {
 public:
  explicit BatchWriter(std::string conninfo) : conninfo_(std::move(conninfo)) {}
  // Throws if the batch was not committed (nothing of it is stored then).
  void write(const Batch& batch);

 private:
  std::string conninfo_;
  std::unique_ptr<Database> db_;
};

// Connects, retrying every second for up to `seconds` while PostgreSQL is unreachable (it may
// still be starting). Throws with the last reason when time is up.
std::unique_ptr<Database> connect_with_retry(const std::string& conninfo, int seconds);

}  // namespace store
