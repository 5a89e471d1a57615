#pragma once
// Group commit. Requests append their journal entry and their effects to the open batch
// (store/journal_batch.hpp) and get its ticket; one writer thread seals the open batch whenever
// the previous write has finished (under load after letting it fill a little: CommitGather
// below), writes its journal entries in one statement, hands the committed batch's effects on
// unmerged (to the projector), and then releases every reply waiting on that ticket. While one
// batch is being committed the next one fills, so the more requests are in flight, the more
// share a commit.
//
// If a write fails, that batch and the one that was filling behind it (whose requests saw the
// failed batch's state) fail together, and the engine is rebuilt from the database before any
// other request runs: memory and database never disagree.
//
// A read proves its answer fresh with a commit that starts after it (proof_ticket(), as Raft's
// ReadIndex does): the open batch is written even with no entry, and since every write checks
// the writer epoch in its own transaction, its commit shows that no other server had taken
// over by then. A proof that fails (nothing written, the database away) fails its waiters
// only: it changed nothing, so nothing is rebuilt.
//
// A write that finds another writer in charge (Fenced) is final: that batch and every later
// one fail as CommitResult::Fenced without being written, and `recover` is told so (it must not
// rebuild anything from a database that is no longer this process's to write).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "market/effects.hpp"
#include "store/deferred_effects.hpp"
#include "store/journal_batch.hpp"

namespace store {

using Ticket = std::uint64_t;

// Thrown by a WriteFn whose write failed when it cannot learn whether the commit went through.
struct CommitOutcomeUnknown : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What became of a request's effects: the group commit's result for its batch (not a request's
// outcome: app::Outcome is that, and maps this once, in outcome_of).
enum class CommitResult {
  Committed,   // durable
  NotApplied,  // certainly not stored (its batch failed, or was never written)
  Unknown,     // the connection broke during its commit and PostgreSQL stayed unreachable
  Fenced,      // not stored: another server took over the database (leadership/fencing.hpp)
};

// How a busy group commit lets its next batch fill before writing it. Each commit costs
// PostgreSQL about the same whatever it carries (a statement, a transaction, a WAL flush), so
// under load fewer, larger batches cost less per request. A batch smaller than the one before
// it (and than `target`) is left to fill until it is as large, or `wait` has passed: the
// requests of the last batch's clients are on their way, since each got its reply. So a steady
// load's batches stop shrinking to whatever arrived during the last commit, and none waits for
// requests that are not coming; an idle server (batches of one) never waits; `wait` 0 turns it
// off. (docs/notes/performance-history.md, "The group commit gathers under load")
struct CommitGather {
  std::chrono::microseconds wait{0};
  std::size_t target = 0;

  // How many requests the open batch waits for, after a batch of `previous`; 0: none.
  std::size_t fill_to(std::size_t open, std::size_t previous) const {
    const std::size_t want = previous < target ? previous : target;
    return wait.count() > 0 && previous >= 2 && open < want ? want : 0;
  }
};

class Batcher {
 public:
  // `write` makes a batch durable or throws (store::CommitOutcomeUnknown when it cannot tell).
  // `recover` runs on the writer thread after a failed write: it must take the engine's
  // exclusive lock, call fail_open_batch(), run the callbacks it hands back, and rebuild the
  // engine from the database (except after CommitResult::Fenced: then nothing is rebuilt).
  using WriteFn = std::function<void(const JournalBatch&, Ticket)>;
  using Done = std::function<void(CommitResult)>;
  using RecoverFn = std::function<void(Batcher& batcher, Ticket failed, CommitResult outcome)>;
  // Runs on the writer thread after each successful write, in commit order, before the
  // batch's replies are released: the effects of the journal entries through `through_seq`.
  using CommittedFn = std::function<void(DeferredEffects&& effects, std::int64_t through_seq)>;

  Batcher(WriteFn write, RecoverFn recover, CommittedFn committed = nullptr);
  ~Batcher();

  // Before start().
  void gather(CommitGather gather) { gather_ = gather; }
  void start();
  // Writes what is pending, then stops the writer.
  void stop();

  // Under the engine's exclusive lock: appends a request's journal entry, with the next journal
  // seq (so journal order is engine order), and its effects to the open batch.
  struct Submitted {
    Ticket ticket;
    std::int64_t seq;
  };
  Submitted submit(JournalEntry&& entry, market::Effects&& fx);
  // Under the engine's exclusive lock: the seq the next submit() will get.
  std::int64_t next_seq();
  // Under the engine's exclusive lock, after the engine was (re)loaded: the next request gets
  // journal seq `seq`.
  void set_next_seq(std::int64_t seq);
  // Under the engine lock (shared is enough): the ticket covering every effect visible now.
  Ticket visible_ticket();
  // Under the engine lock (shared is enough): the ticket of a commit that covers every effect
  // visible now and starts after this call: the open batch, written even if nothing else joins.
  Ticket proof_ticket();
  // Under the engine lock: the open batch must not be written (the engine hit an internal
  // error while applying a request); it fails and the engine is rebuilt.
  void poison_open_batch();
  // Runs `done` once the ticket's batch is committed or has failed: at once if that is
  // already known, otherwise on the writer thread.
  void when_durable(Ticket ticket, Done done);
  // For RecoverFn, under the engine's exclusive lock: batch `failed` ended with `outcome`;
  // fails the open batch behind it as well (its requests saw the failed batch's state and
  // were never written: NotApplied, or Fenced after a fenced write). Returns every failed
  // request's callback, bound to its outcome, to be run outside the lock.
  std::vector<std::function<void()>> fail_open_batch(Ticket failed, CommitResult outcome);

  // Why a write was fenced (Fenced::what()); empty unless one was.
  std::string fenced_why() const;

  // Every batch up to this ticket is durable.
  Ticket committed_through() const;
  // How long the batch being committed has been at it (its write and handing its effects on,
  // which waits while the projection is too far behind); zero while the writer is idle.
  // Lock-free, for health checks.
  std::chrono::milliseconds commit_stalled_for() const;

  struct Stats {
    std::uint64_t batches = 0, requests = 0, failures = 0;
    std::uint64_t proofs = 0;  // of the batches, those with no entry (a read's proof alone)
    std::uint64_t write_microseconds = 0;  // time spent in committed writes
  };
  Stats stats() const;
  // "N journaled requests in M commits (mean R requests and T ms per commit), P of them read
  // proofs alone", for the log.
  static std::string describe(const Stats& stats);

 private:
  void run();
  // The open batch taken for writing (a fresh one, `next`, opened in its place) once there is
  // one; false when stopping with nothing left to write.
  struct Sealed {
    JournalBatch batch;
    Ticket ticket = 0;
    CommitResult outcome = CommitResult::Committed;  // what it is to be, before any write
  };
  bool seal(JournalBatch next, std::size_t last_size, Sealed& out);
  // Writes a sealed batch meant to commit; what became of it.
  CommitResult write(JournalBatch& batch, Ticket ticket);
  // A proof (a batch with no entry) that failed short of a fence: its waiters get `outcome`;
  // one that waits on it later waits for the next commit.
  void fail_proof(Ticket ticket, CommitResult outcome);
  // Hands a committed batch's effects on, counts it and releases its waiters.
  void finish(JournalBatch batch, Ticket ticket, std::chrono::steady_clock::time_point started);
  // Lets the open batch fill under load (CommitGather), with mutex_ held by `lock`.
  void let_fill(std::unique_lock<std::mutex>& lock, std::size_t to);
  // The outcome of a ticket in a failed range, if it is in one.
  bool failed(Ticket t, CommitResult& outcome) const;
  std::vector<std::pair<Ticket, Done>> take_waiters_through(Ticket t);

  WriteFn write_;
  RecoverFn recover_;
  CommittedFn committed_;
  std::int64_t next_seq_ = 1;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  JournalBatch open_;
  bool open_poisoned_ = false;
  bool open_proves_ = false;  // a read waits on the open batch: it is written even if empty
  // The last proof (a batch with no entry) that failed; tickets up to it that neither committed
  // nor failed as a write were failed proofs.
  Ticket failed_proof_through_ = 0;
  Ticket open_ticket_ = 1;
  Ticket committed_through_ = 0;
  struct FailedRange {
    Ticket first, last;          // inclusive
    CommitResult first_outcome;  // the batch whose write failed; the rest are NotApplied (Fenced
                                 // when it was)
    CommitResult rest() const {
      return first_outcome == CommitResult::Fenced ? CommitResult::Fenced
                                                   : CommitResult::NotApplied;
    }
  };
  std::vector<FailedRange> failed_ranges_;  // rare
  std::multimap<Ticket, Done> waiters_;
  bool stopping_ = false;
  bool fenced_ = false;  // a write was fenced: nothing more is written
  std::string fenced_why_;
  CommitGather gather_;       // set before start(), read by the writer only
  bool writer_idle_ = false;  // waiting for work: a submit must wake it
  std::size_t fill_to_ = 0;   // letting the open batch fill to this: the submit that does wakes it
  Stats stats_;
  std::atomic<std::int64_t> cycle_started_ns_{0};  // steady clock; 0 while idle
  std::thread writer_;
};

}  // namespace store
