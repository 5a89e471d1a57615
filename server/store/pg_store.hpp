#pragma once
// The ports of store/ports.hpp on PostgreSQL: each a connection of its own (store::Database),
// named in pg_stat_activity by its role, bounded by `timeout` like every other call.
#include <chrono>
#include <string>

#include "store/database.hpp"
#include "store/ports.hpp"

namespace store {

class PgStore final : public Store {
 public:
  PgStore(std::string conninfo, std::chrono::milliseconds timeout = kDefaultDbTimeout);

  // store::BatchWriter; a broken commit's outcome is looked up for `timeout`.
  std::unique_ptr<JournalWriter> journal_writer(leadership::FencingToken token) override;
  // A write that fails drops its connection; the next one opens a fresh connection and first
  // ends the old one's backend (a statement the timeout cut off may still be running there).
  std::unique_ptr<ProjectionWriter> projection_writer(leadership::FencingToken token) override;
  std::unique_ptr<StateReader> state_reader() override;
  std::unique_ptr<JournalFollower> journal_follower() override;
  std::unique_ptr<ArchiveReader> archive_reader() override;

 private:
  std::string conninfo_;
  std::chrono::milliseconds timeout_;
};

}  // namespace store
