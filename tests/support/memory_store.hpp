#pragma once
// An in-memory store behind the ports of server/store/ports.hpp, for unit tests of the durable
// core without PostgreSQL: the journal, the projection (its rows merged as PostgreSQL would hold
// them, and loaded back the way Database::load reads them), the writer epoch that fences, and
// faults a test can inject. It passes the same contract as store::PgStore
// (support/store_contract.hpp).
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "store/ports.hpp"

namespace test {

// What the ports of one MemoryStore share: the database, as it were.
struct MemoryDatabase {
  mutable std::mutex mutex;
  std::condition_variable changed;
  std::map<std::int64_t, store::JournalEntry> journal;  // by seq
  std::int64_t epoch = 1;                               // writer_epoch
  store::ProjectionRows projection;                     // every write merged
  std::int64_t position = 0;                            // projection_position.seq
  struct Write {
    std::int64_t through_seq;
    std::size_t rows;                          // before merging (ProjectionRows::rows)
    std::chrono::steady_clock::duration took;  // from its start to its commit, paces included
  };
  std::vector<Write> projection_writes;
  std::uint64_t journal_batches = 0;

  // Faults: the next N journal writes fail before storing anything; the next N store their
  // entries and then lose the answer (CommitOutcomeUnknown); the next N projection writes fail.
  int fail_journal_writes = 0;
  int unknown_journal_writes = 0;
  int fail_projection_writes = 0;
  int fail_state_reads = 0;  // state_reader() and journal_follower() throw
  // While set, projection writes wait (a silent database): backpressure tests.
  bool hold_projection = false;

  // Another writer took over: the epoch moves on.
  void bump_epoch();
  // The stored rows of those of `ids` that exist, in id order, as load() hands open ones to
  // the engine (as store::Database::order_rows reads them from PostgreSQL).
  std::vector<market::OrderRow> order_rows(const std::vector<market::OrderId>& ids) const;
  std::int64_t last_seq() const;
};

class MemoryStore final : public store::Store {
 public:
  explicit MemoryStore(MemoryDatabase& db) : db_(db) {}
  std::unique_ptr<store::JournalWriter> journal_writer(leadership::FencingToken token) override;
  std::unique_ptr<store::ProjectionWriter> projection_writer(
      leadership::FencingToken token) override;
  std::unique_ptr<store::StateReader> state_reader() override;
  std::unique_ptr<store::JournalFollower> journal_follower() override;
  std::unique_ptr<store::ArchiveReader> archive_reader() override;

 private:
  MemoryDatabase& db_;
};

}  // namespace test
