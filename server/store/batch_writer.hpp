#pragma once
// The group commit's connection. A write that fails drops the connection, so the next batch
// starts on a fresh one: the server reconnects on its own after PostgreSQL restarts.
//
// A connection that breaks during a commit leaves its outcome unknown: PostgreSQL may have
// committed and lost only the answer. The writer then reconnects and reads commit_marker to
// learn which it was, so clients are never told "not applied" about a committed request.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "store/batch.hpp"
#include "store/batcher.hpp"
#include "store/database.hpp"

namespace store {

class BatchWriter {
 public:
  // `resolve_for`: how long to keep trying to learn a broken commit's outcome.
  explicit BatchWriter(std::string conninfo,
                       std::chrono::milliseconds resolve_for = std::chrono::seconds(10));
  // Returns once batch number `sequence` is committed. Throws CommitOutcomeUnknown if the
  // connection broke and PostgreSQL stayed unreachable for resolve_for; any other exception
  // means nothing of the batch is stored.
  void write(const Batch& batch, std::uint64_t sequence);

 private:
  // After a failed write: true if it committed after all; throws CommitOutcomeUnknown.
  bool committed_after_all(const CommitMark& mark, const std::string& failure);

  std::string conninfo_;
  std::chrono::milliseconds resolve_for_;
  std::int64_t writer_id_;
  std::unique_ptr<Database> db_;
};

// Connects, retrying every second for up to `seconds` while PostgreSQL is unreachable (it may
// still be starting). Throws with the last reason when time is up.
std::unique_ptr<Database> connect_with_retry(const std::string& conninfo, int seconds);

}  // namespace store
