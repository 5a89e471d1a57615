#pragma once
// Keeps the SQL tables (accounts, positions, orders, executions) a projection of the journal,
// off the reply path. Each committed journal batch's effects are queued here in order, unmerged
// (store/deferred_effects.hpp; a replay's chunks come merged already); one thread merges
// whatever has queued into ProjectionRows (store/projection_rows.hpp: the last row per key wins,
// executions appended) and hands it to its ProjectionWriter (store/ports.hpp), which writes it in
// one transaction together with projection_position, so the tables always hold the state as of
// one journal seq. When to write, how much at once and how fast (the pacing) is decided here
// alone. The journal is the truth: a failed write is retried with backoff (the writer starts
// afresh), and meanwhile the projection only lags; failures() and oldest_unprojected() let
// health and metrics say so.
//
// Everything here is counted in rows (what the requests produced, before merging), the unit of
// both memory and database work. Past kWarnPendingRows the log says so every 10 s. The queue
// is bounded by whoever feeds it: app::DurableEngine pauses its commits while the projection lags
// too far (wait_pending_below), and so does a start-up or reload replay.
//
// Its writer carries the fencing token (leadership/fencing.hpp). Once one is fenced (another
// server took over the database), or fence() is called, it never writes again: a stale
// projector would overwrite the new writer's rows with old final values. Whatever is queued
// then is dropped and every wait returns.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "store/deferred_effects.hpp"
#include "store/ports.hpp"
#include "store/projection_rows.hpp"

namespace store {

class Projector {
 public:
  static constexpr std::size_t kWarnPendingRows = 1000000;
  // Rows merged into one write at most (each COPY of it holds at most kRowsPerStep rows, each
  // statement kRowsPerPace per table, store/database.hpp): about a second of projection here.
  static constexpr std::size_t kMaxRowsPerWrite = 100000;
  // How long queued effects gather before a write by default (unless kMaxRowsPerWrite are
  // queued, or no batch came for kQuietFor): under load the projection trails the journal by
  // about this much plus one write.
  static constexpr std::chrono::milliseconds kDefaultGather{500};
  static constexpr std::chrono::milliseconds kQuietFor{50};
  // A write of at least this many rows is spread over most of the gather interval (write();
  // there a changed row counts as kChangedRowCost, store/database.hpp).
  static constexpr std::size_t kRowsToSpread = 5000;

  // Runs once, on the projector's thread, when one of its writes was fenced; with why.
  using FencedFn = std::function<void(const std::string& why)>;

  // `writer`: where the rows go (its writes carry the fencing token). `timeout`: what bounds
  // each of the writer's calls (--db-timeout-ms); a write is spread over at most a quarter of
  // it. `journal_keep`: once projected, journal
  // entries older than the newest `journal_keep` are deleted (0 keeps the whole journal).
  // `delay` (a test aid, 0 in production) holds each write back that long.
  Projector(std::unique_ptr<ProjectionWriter> writer, std::chrono::milliseconds timeout,
            std::int64_t journal_keep = 0,
            std::chrono::milliseconds delay = std::chrono::milliseconds(0),
            FencedFn on_fenced = nullptr);
  ~Projector();
  Projector(const Projector&) = delete;
  Projector& operator=(const Projector&) = delete;

  // How long effects gather before a write (--projection-gather-ms); call before start().
  void gather_for(std::chrono::milliseconds gather);
  void start();
  // Writes what is queued (giving up after `drain_for` of failures: the next start replays
  // the journal anyway), then stops the thread.
  void stop(std::chrono::seconds drain_for = std::chrono::seconds(10));

  // Queues the effects of the journal entries up to `through_seq` (in seq order), as the group
  // commit hands them on: they are merged here, on the projector's thread.
  void enqueue(DeferredEffects&& effects, std::int64_t through_seq);
  // The same, merged already (a replay merges its chunks on its own thread).
  void enqueue(ProjectionRows&& rows, std::int64_t through_seq);
  // Before a reload: drops every queued batch (the replay derives them again from the journal)
  // and waits for a write in progress to end, so the stored position stays put while the
  // reload reads it.
  void discard_queue();
  // After a reload read the stored position.
  void set_projected(std::int64_t seq);
  // Blocks while `rows` rows or more wait to be projected, until stop() or release_waits().
  void wait_pending_below(std::size_t rows);
  // A forced shutdown: every wait_pending_below() returns now and later ones do not block.
  void release_waits();
  // Another writer took over: nothing more is written (not even a write already under way is
  // retried), the queue is dropped and waits return. Thread-safe; does not call on_fenced.
  void fence();

  // Every journal entry up to this seq is in the SQL tables.
  std::int64_t projected_seq() const { return projected_.load(std::memory_order_acquire); }
  // The last journal seq handed over.
  std::int64_t queued_seq() const { return queued_.load(std::memory_order_acquire); }
  // Rows waiting to be projected (queued and being written).
  std::size_t pending_rows() const { return pending_rows_.load(); }
  // How long the oldest journal entry not yet in the tables has waited (zero when none).
  std::chrono::milliseconds oldest_unprojected() const;
  // Failed writes in a row (0 once one succeeds), failed writes ever, and why the last failed.
  struct Failures {
    std::uint64_t in_a_row = 0, total = 0;
    std::string last_error;
  };
  Failures failures() const;

 private:
  void run();
  // Writes `rows` until they commit; false if abandoned (stopping past the drain deadline, or
  // discard_queue() was called meanwhile).
  // `queued`: the rows they were before merging (their share of pending_rows()).
  bool write(const ProjectionRows& rows, std::int64_t through_seq, std::uint64_t generation,
             std::size_t queued);
  // Waits until `until` for a write of `queued` rows in `generation`, so that its CPU is
  // spread out; not at all (or no longer) once stopping, fenced, the queue was discarded, or
  // the projection is behind (half a write's rows more queued behind it).
  void pause_until(std::chrono::steady_clock::time_point until, std::uint64_t generation,
                   std::size_t queued);
  // Deletes projected journal entries beyond `journal_keep`, a chunk at a time; a failure
  // only postpones it.
  void trim_journal(std::int64_t projected_through);
  // A write was fenced: fence(), then on_fenced_.
  void fenced(const std::string& why);
  void log_progress(std::chrono::steady_clock::time_point& last_log, std::int64_t& last_seq);

  std::unique_ptr<ProjectionWriter> writer_;  // the projector thread's
  std::chrono::milliseconds timeout_;
  std::int64_t journal_keep_;
  std::int64_t trimmed_through_ = 0;  // the projector thread's
  std::chrono::milliseconds delay_;
  std::chrono::milliseconds gather_ = kDefaultGather;
  FencedFn on_fenced_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;     // work queued, or stopping
  std::condition_variable drained_;  // a write ended or the queue shrank
  struct Queued {
    ProjectionRows merged;    // one of these two holds the rows
    DeferredEffects effects;  // (the other is empty)
    std::int64_t through_seq;
    std::chrono::steady_clock::time_point enqueued;
    std::size_t rows() const { return merged.rows + effects.rows(); }
  };
  void enqueue(Queued&& queued);
  // Merges what run() took off the queue (`queued` rows before merging), half of the time:
  // after each millisecond of merging it pauses for one (pause_until).
  ProjectionRows merge(std::vector<Queued>& taken, std::uint64_t generation, std::size_t queued);
  std::deque<Queued> queue_;
  // In queue_ and in the write in progress; changed under mutex_, read by metrics without.
  std::atomic<std::size_t> pending_rows_{0};
  // When the oldest entry not yet projected was queued (in queue_ or being written).
  std::chrono::steady_clock::time_point oldest_pending_;
  Failures failures_;  // under mutex_
  bool writing_ = false;
  std::uint64_t generation_ = 0;  // bumped by discard_queue()
  bool stopping_ = false;
  bool waits_released_ = false;
  bool fenced_ = false;
  std::chrono::steady_clock::time_point drain_deadline_;
  std::atomic<std::int64_t> projected_{0};
  std::atomic<std::int64_t> queued_{0};
  std::thread thread_;
};

}  // namespace store
