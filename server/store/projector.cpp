#include "store/projector.hpp"

#include <pthread.h>

#include <algorithm>
#include <vector>

#include "leadership/fencing.hpp"
#include "util/log.hpp"

namespace store {

Projector::Projector(std::unique_ptr<ProjectionWriter> writer, std::chrono::milliseconds timeout,
                     std::int64_t journal_keep, std::chrono::milliseconds delay, FencedFn on_fenced)
    : writer_(std::move(writer)),
      timeout_(timeout),
      journal_keep_(journal_keep),
      delay_(delay),
      on_fenced_(std::move(on_fenced)) {}

void Projector::gather_for(std::chrono::milliseconds gather) { gather_ = gather; }

Projector::~Projector() { stop(std::chrono::seconds(0)); }

void Projector::start() {
  thread_ = std::thread([this] { run(); });
}

void Projector::stop(std::chrono::seconds drain_for) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stopping_) drain_deadline_ = std::chrono::steady_clock::now() + drain_for;
    stopping_ = true;
  }
  wake_.notify_all();
  drained_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Projector::enqueue(DeferredEffects&& effects, std::int64_t through_seq) {
  enqueue(Queued{{}, std::move(effects), through_seq, {}});
}

void Projector::enqueue(ProjectionRows&& rows, std::int64_t through_seq) {
  enqueue(Queued{std::move(rows), {}, through_seq, {}});
}

void Projector::enqueue(Queued&& queued) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (fenced_) return;  // never to be written
    const auto now = std::chrono::steady_clock::now();
    if (pending_rows_ == 0 && !writing_) oldest_pending_ = now;
    // The thread needs waking only from its idle wait, or to write early (it gathers on a
    // timer): one system call less per commit.
    const std::size_t rows = queued.rows();
    wake = queue_.empty() ||
           (pending_rows_ < kMaxRowsPerWrite && pending_rows_ + rows >= kMaxRowsPerWrite);
    pending_rows_ += rows;
    queued.enqueued = now;
    queued_.store(queued.through_seq, std::memory_order_release);
    queue_.push_back(std::move(queued));
  }
  if (wake) wake_.notify_one();
}

void Projector::discard_queue() {
  std::unique_lock<std::mutex> lock(mutex_);
  ++generation_;
  wake_.notify_all();  // a write pausing between its rows goes on at once
  queue_.clear();
  drained_.wait(lock, [this] { return !writing_; });
  pending_rows_ = 0;
}

void Projector::set_projected(std::int64_t seq) {
  std::lock_guard<std::mutex> lock(mutex_);
  projected_.store(seq, std::memory_order_release);
  queued_.store(seq, std::memory_order_release);
}

void Projector::wait_pending_below(std::size_t rows) {
  std::unique_lock<std::mutex> lock(mutex_);
  drained_.wait(lock,
                [&] { return pending_rows_ < rows || stopping_ || waits_released_ || fenced_; });
}

void Projector::fence() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fenced_ = true;
    ++generation_;  // a write under way gives up instead of retrying
    queue_.clear();
    pending_rows_ = 0;
  }
  wake_.notify_all();
  drained_.notify_all();
}

std::chrono::milliseconds Projector::oldest_unprojected() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (pending_rows_ == 0 && !writing_ && queue_.empty()) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               oldest_pending_);
}

Projector::Failures Projector::failures() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failures_;
}

void Projector::release_waits() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    waits_released_ = true;
  }
  drained_.notify_all();
}

bool Projector::write(const ProjectionRows& rows, std::int64_t through_seq,
                      std::uint64_t generation, std::size_t queued) {
  // A large write's rows are spread evenly over most of the gather interval, a few hundred
  // at a time (Database::kRowsPerPace): its PostgreSQL CPU is then a steady share of a core
  // instead of bursts that hold up the group commit (a write in 5,000-row steps made every
  // half second a 300 ms stretch of 2-4 times the replies' p99; docs/notes/performance-history.md,
  // "Where the rest goes"). At most a quarter of --db-timeout-ms, so that no step of the write
  // nears the timeout. Small writes (an idle server's, a test's) are not held back, nor is a write
  // while the projection is behind (the next one is due already), when stopping, fenced or
  // discarded; a retry goes at full speed (its start has passed).
  const auto started = std::chrono::steady_clock::now();
  const auto spread = std::min<std::chrono::steady_clock::duration>(gather_ * 4 / 5, timeout_ / 4);
  const auto pace = [this, queued, generation, started, spread](std::size_t sent, std::size_t all) {
    if (all < kRowsToSpread) return;
    pause_until(started + spread * static_cast<std::int64_t>(sent) / static_cast<std::int64_t>(all),
                generation, queued);
  };
  auto last_error_log = std::chrono::steady_clock::time_point();
  for (int attempt = 1;; ++attempt) {
    try {
      writer_->write(rows, through_seq, pace);
      if (attempt > 1)
        EXCHANGE_LOG(warn) << "projection written through journal seq " << through_seq << " after "
                           << attempt << " attempts";
      std::lock_guard<std::mutex> lock(mutex_);
      failures_.in_a_row = 0;
      return true;
    } catch (const leadership::Fenced& e) {
      fenced(e.what());
      return false;
    } catch (const std::exception& e) {
      // The writer starts afresh for the retry (a new connection, the old one's backend ended).
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++failures_.in_a_row;
        ++failures_.total;
        failures_.last_error = e.what();
      }
      auto now = std::chrono::steady_clock::now();
      if (now - last_error_log >= std::chrono::seconds(10)) {
        EXCHANGE_LOG(error) << "projecting through journal seq " << through_seq
                            << " failed (attempt " << attempt << "; retrying, the journal "
                            << "holds every acknowledged request): " << e.what();
        last_error_log = now;
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (generation_ != generation) return false;
        // Stopping: no retries (the next start replays the journal), and no drain past its end.
        if (stopping_) return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(attempt, 20) * 100));
    }
  }
}

void Projector::pause_until(std::chrono::steady_clock::time_point until, std::uint64_t generation,
                            std::size_t queued) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto give_up = [this, generation] {
    return stopping_ || fenced_ || generation_ != generation;
  };
  if (give_up() || pending_rows_ >= queued + kMaxRowsPerWrite / 2) return;
  wake_.wait_until(lock, until, give_up);
}

ProjectionRows Projector::merge(std::vector<Queued>& taken, std::uint64_t generation,
                                std::size_t queued) {
  // Merging a write's tens of thousands of rows took the projector's thread 10-20 ms at once
  // (cold rows other threads wrote, each looked up and moved), and the replies' p99 rose in
  // just those milliseconds; at half speed the same CPU is a milder share for twice as long
  // (p99 lower in most alternating rounds; docs/notes/performance-history.md, "The bursts left in a
  // write"). The write is paced from the end of the merge, so its own spreading is unchanged.
  constexpr auto kSlice = std::chrono::milliseconds(1);
  ProjectionRows merged;
  auto slice_start = std::chrono::steady_clock::now();
  for (auto& q : taken) {
    merged.merge(std::move(q.merged));
    merged.merge(std::move(q.effects));
    const auto now = std::chrono::steady_clock::now();
    if (now - slice_start < kSlice || queued < kRowsToSpread) continue;
    pause_until(now + kSlice, generation, queued);
    slice_start = std::chrono::steady_clock::now();
  }
  return merged;
}

void Projector::trim_journal(std::int64_t projected_through) {
  // In chunks: one DELETE per 1,000 entries keeps each statement short and the cost off the
  // reply path (the projector has its own connection).
  constexpr std::int64_t kTrimEvery = 1000;
  if (journal_keep_ <= 0) return;
  const std::int64_t through = projected_through - journal_keep_;
  if (through < trimmed_through_ + kTrimEvery) return;
  try {
    const std::int64_t deleted = writer_->trim_journal(through);
    trimmed_through_ = through;
    EXCHANGE_LOG(debug) << "journal trimmed through seq " << through << " (" << deleted
                        << " entries deleted)";
  } catch (const leadership::Fenced& e) {
    fenced(e.what());
  } catch (const std::exception& e) {
    EXCHANGE_LOG(warn) << "trimming the journal through seq " << through
                       << " failed (retried later): " << e.what();
  }
}

void Projector::fenced(const std::string& why) {
  fence();
  if (on_fenced_) on_fenced_(why);
}

void Projector::log_progress(std::chrono::steady_clock::time_point& last_log,
                             std::int64_t& last_seq) {
  auto now = std::chrono::steady_clock::now();
  if (now - last_log < std::chrono::seconds(10)) return;
  last_log = now;
  const std::int64_t queued = queued_seq(), projected = projected_seq();
  if (pending_rows_ > kWarnPendingRows) {
    EXCHANGE_LOG(warn) << "the projection is falling behind: " << pending_rows_
                       << " rows wait to be projected (journal seq " << queued
                       << ", projected through " << projected << ")";
  } else if (queued != last_seq || queued != projected) {
    EXCHANGE_LOG(info) << "projection lag: " << (queued - projected)
                       << " journal entries (journal seq " << queued << ", projected through "
                       << projected << ")";
  }
  last_seq = queued;
}

void Projector::run() {
  // Named for top -H and perf (scripts/profile.sh splits the server's CPU by thread).
  pthread_setname_np(pthread_self(), "exch-projector");
  writer_->warm_up();
  auto last_log = std::chrono::steady_clock::now();
  std::int64_t last_logged_seq = queued_seq();
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_ || !queue_.empty(); });
    if (fenced_) {
      if (stopping_) return;
      continue;  // fence() emptied the queue; nothing is written any more
    }
    log_progress(last_log, last_logged_seq);
    if (queue_.empty()) {
      if (stopping_) return;
      continue;
    }
    if (delay_.count() > 0 && !stopping_) {
      wake_.wait_for(lock, delay_, [this] { return stopping_; });
      if (queue_.empty()) continue;
    }
    // Gather before writing: in one write the last row per account, position and order wins
    // (an order placed and filled within the stretch is written once), so the longer the
    // stretch, the fewer rows PostgreSQL writes per request (the CPU it saves is the reply
    // path's, on a machine of few cores). Under load that is gather_ from the oldest entry
    // waiting; once no batch has come for kQuietFor, what waits is written at once, so an
    // idle server's tables are not kept waiting.
    if (!stopping_ && pending_rows_ < kMaxRowsPerWrite) {
      const std::uint64_t generation = generation_;
      const auto deadline = queue_.front().enqueued + gather_;
      for (;;) {
        if (stopping_ || pending_rows_ >= kMaxRowsPerWrite || generation_ != generation) break;
        const auto quiet_from = queue_.back().enqueued + kQuietFor;
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline || now >= quiet_from) break;
        wake_.wait_until(lock, std::min(deadline, quiet_from));
      }
      if (queue_.empty()) continue;
    }
    // Take a bounded run of queued batches; merge them outside the lock (enqueue runs on the
    // group commit's thread and must not wait for this).
    std::vector<Queued> taken;
    std::size_t rows = 0;
    while (!queue_.empty() && (taken.empty() || rows + queue_.front().rows() <= kMaxRowsPerWrite)) {
      rows += queue_.front().rows();
      taken.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    const std::uint64_t generation = generation_;
    writing_ = true;
    lock.unlock();

    ProjectionRows merged = merge(taken, generation, rows);
    const std::int64_t through = taken.back().through_seq;
    taken.clear();
    bool ok = write(merged, through, generation, rows);
    if (ok) trim_journal(through);

    lock.lock();
    writing_ = false;
    if (ok) {
      projected_.store(std::max(projected_seq(), through), std::memory_order_release);
      if (generation == generation_) {
        pending_rows_ -= rows;
        if (!queue_.empty()) oldest_pending_ = queue_.front().enqueued;
      }
    } else if (generation == generation_ && !fenced_) {
      // Stopping with PostgreSQL away: the next start replays the journal after the position.
      EXCHANGE_LOG(warn) << "stopping with the projection at journal seq " << projected_seq()
                         << "; the next start replays the journal after it";
      queue_.clear();
      pending_rows_ = 0;
    }
    drained_.notify_all();
  }
}

}  // namespace store
