#pragma once
// The group commit's connection. A write that fails drops the connection, so the next batch
// starts on a fresh one: the server reconnects on its own after PostgreSQL restarts.
//
// A connection that breaks during a commit leaves its outcome unknown: PostgreSQL may have
// committed and lost only the answer. The writer then reconnects, makes sure the old
// connection's backend is gone (terminating it if needed: while it lives, a statement it
// received may still commit), and looks for the batch's marked last journal row to learn which
// it was, so clients are never told "not applied" about a committed request. A commit that gets
// no answer within the database timeout counts as a broken connection (the watchdog closes it).
//
// Every write carries the writer epoch this process was given (leadership/writer_lock.hpp): one
// that finds another epoch in place throws Fenced, and so does every write after it, without asking
// PostgreSQL again.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "store/batcher.hpp"
#include "store/database.hpp"
#include "store/journal.hpp"
#include "store/ports.hpp"
#include "util/stop_flag.hpp"

namespace store {

class BatchWriter final : public JournalWriter {
 public:
  // `token`: the writer epoch the writes must find; `resolve_for`: how long to keep trying to
  // learn a broken commit's outcome; `timeout` bounds each call on PostgreSQL (Database).
  BatchWriter(std::string conninfo, leadership::FencingToken token,
              std::chrono::milliseconds resolve_for = std::chrono::seconds(10),
              std::chrono::milliseconds timeout = kDefaultDbTimeout);
  // Returns once batch number `sequence` (its journal `entries`) is committed. Throws
  // CommitOutcomeUnknown if the connection broke and PostgreSQL stayed unreachable for resolve_for,
  // Fenced if another writer took over (now or earlier); any other exception means nothing of the
  // batch is stored.
  void write(const std::vector<JournalEntry>& entries, std::uint64_t sequence) override;
  // Another writer took over (the writer lock's keeper found out): every later write throws
  // Fenced with `why`. Thread-safe.
  void fence(const std::string& why) override;
  // For a shutdown whose grace period is over: from now on nothing more is written (writes
  // throw, "not applied"), and a broken commit's outcome is no longer looked up (unknown).
  // Thread-safe.
  void abandon() override { abandoned_ = true; }

  Counts counts() const override { return {broken_commits_.load(), reconnects_.load()}; }

 private:
  // After a failed write: true if it committed after all; throws CommitOutcomeUnknown.
  bool committed_after_all(const CommitMark& mark, const Backend& old, const std::string& failure);

  std::string conninfo_;
  std::int64_t epoch_;
  std::chrono::milliseconds resolve_for_;
  std::chrono::milliseconds timeout_;
  std::int64_t writer_id_;
  std::unique_ptr<Database> db_;
  Backend backend_;  // db_'s
  std::atomic<bool> abandoned_{false};
  mutable std::mutex fenced_mutex_;
  std::string fenced_;  // why, once fenced; empty until then
  std::atomic<std::uint64_t> broken_commits_{0}, reconnects_{0}, connections_{0};
};

// Connects, retrying every second for up to `seconds` while PostgreSQL is unreachable (it may
// still be starting), and not after `stop` is requested. Throws with the last reason when time
// is up or a stop was requested. Logs the first failure and each change of reason, not every
// retry.
std::unique_ptr<Database> connect_with_retry(const std::string& conninfo, int seconds,
                                             const util::StopFlag* stop = nullptr,
                                             std::chrono::milliseconds timeout = kDefaultDbTimeout);

}  // namespace store
