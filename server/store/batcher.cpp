#include "store/batcher.hpp"

#include <pthread.h>

#include <sstream>

#include "leadership/fencing.hpp"
#include "util/log.hpp"

namespace store {

Batcher::Batcher(WriteFn write, RecoverFn recover, CommittedFn committed)
    : write_(std::move(write)), recover_(std::move(recover)), committed_(std::move(committed)) {}

Batcher::~Batcher() { stop(); }

void Batcher::start() {
  writer_ = std::thread([this] { run(); });
}

void Batcher::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (writer_.joinable()) writer_.join();
}

Batcher::Submitted Batcher::submit(JournalEntry&& entry, market::Effects&& fx) {
  std::lock_guard<std::mutex> lock(mutex_);
  entry.seq = next_seq_++;
  const std::int64_t seq = entry.seq;
  open_.add(std::move(entry), std::move(fx));  // the effects are merged on the projector's thread
  // Waking the writer costs a system call; while it is busy writing it will look at the open
  // batch anyway when it finishes.
  if (writer_idle_ || (fill_to_ != 0 && open_.requests == fill_to_)) wake_.notify_one();
  return {open_ticket_, seq};
}

std::int64_t Batcher::next_seq() {
  std::lock_guard<std::mutex> lock(mutex_);
  return next_seq_;
}

void Batcher::set_next_seq(std::int64_t seq) {
  std::lock_guard<std::mutex> lock(mutex_);
  next_seq_ = seq;
}

Ticket Batcher::visible_ticket() {
  std::lock_guard<std::mutex> lock(mutex_);
  // An empty open batch holds nothing anyone could have seen: the one before it covers all,
  // unless that one failed: the engine was then rebuilt from what is durable, so the last
  // committed batch covers all (reads after a failed commit must not inherit its failure).
  if (!open_.empty()) return open_ticket_;
  CommitResult outcome;
  return failed(open_ticket_ - 1, outcome) ? committed_through_ : open_ticket_ - 1;
}

Ticket Batcher::proof_ticket() {
  std::lock_guard<std::mutex> lock(mutex_);
  open_proves_ = true;
  if (writer_idle_) wake_.notify_one();
  return open_ticket_;
}

void Batcher::poison_open_batch() {
  std::lock_guard<std::mutex> lock(mutex_);
  open_poisoned_ = true;
  ++open_.requests;  // makes the writer take it even if nothing else was merged
  wake_.notify_one();
}

bool Batcher::failed(Ticket t, CommitResult& outcome) const {
  for (const FailedRange& r : failed_ranges_) {
    if (t >= r.first && t <= r.last) {
      outcome = t == r.first ? r.first_outcome : r.rest();
      return true;
    }
  }
  return false;
}

void Batcher::when_durable(Ticket ticket, Done done) {
  bool known = true;
  CommitResult outcome = CommitResult::Committed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failed(ticket, outcome) && ticket > committed_through_) {
      known = false;
      waiters_.emplace(ticket, std::move(done));
      // A proof that failed before its read asked (after an archive lookup): the next commit,
      // which starts after the read too, proves it or fails it; one is written now.
      if (ticket <= failed_proof_through_) {
        open_proves_ = true;
        if (writer_idle_) wake_.notify_one();
      }
    }
  }
  if (known) done(outcome);
}

std::vector<std::pair<Ticket, Batcher::Done>> Batcher::take_waiters_through(Ticket t) {
  std::vector<std::pair<Ticket, Done>> out;
  auto end = waiters_.upper_bound(t);
  for (auto it = waiters_.begin(); it != end; ++it)
    out.emplace_back(it->first, std::move(it->second));
  waiters_.erase(waiters_.begin(), end);
  return out;
}

std::vector<std::function<void()>> Batcher::fail_open_batch(Ticket failed_ticket,
                                                            CommitResult outcome) {
  std::lock_guard<std::mutex> lock(mutex_);
  const FailedRange range{failed_ticket, open_ticket_, outcome};
  failed_ranges_.push_back(range);
  open_ = JournalBatch();
  open_poisoned_ = false;
  ++open_ticket_;
  ++stats_.failures;
  std::vector<std::function<void()>> out;
  for (auto& [ticket, done] : take_waiters_through(open_ticket_ - 1)) {
    CommitResult o = ticket == failed_ticket ? outcome : range.rest();
    out.push_back([o, done = std::move(done)] { done(o); });
  }
  return out;
}

void Batcher::let_fill(std::unique_lock<std::mutex>& lock, std::size_t to) {
  // Submits meanwhile join the open batch; only the one that fills it wakes us (a wake-up per
  // request would cost what the gathering saves), and poison_open_batch and stop() do. Not cut
  // short when arrivals pause: right after a commit they always do, until the replies it
  // released come back as the next requests (a wait that ended at the first pause of 50 us
  // gathered nothing; docs/notes/performance-history.md, "The group commit gathers under load").
  fill_to_ = to;
  wake_.wait_for(lock, gather_.wait,
                 [this] { return stopping_ || open_poisoned_ || open_.requests >= fill_to_; });
  fill_to_ = 0;
}

std::string Batcher::fenced_why() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return fenced_why_;
}

Ticket Batcher::committed_through() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return committed_through_;
}

Batcher::Stats Batcher::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

std::string Batcher::describe(const Stats& stats) {
  std::ostringstream out;
  out << stats.requests << " journaled requests in " << stats.batches << " commits (mean "
      << (stats.batches ? stats.requests / double(stats.batches) : 0.0) << " requests and "
      << (stats.batches ? stats.write_microseconds / 1000.0 / stats.batches : 0.0)
      << " ms per commit), " << stats.proofs << " of them read proofs alone";
  return out.str();
}

namespace {

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::chrono::milliseconds Batcher::commit_stalled_for() const {
  const std::int64_t started = cycle_started_ns_.load(std::memory_order_relaxed);
  if (started == 0) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::nanoseconds(steady_ns() - started));
}

bool Batcher::seal(JournalBatch next, std::size_t last_size, Sealed& out) {
  std::unique_lock<std::mutex> lock(mutex_);
  writer_idle_ = true;
  wake_.wait(lock, [this] { return stopping_ || !open_.empty() || open_proves_; });
  writer_idle_ = false;
  if (open_.empty() && !open_proves_) return false;  // stopping, nothing left to write
  open_proves_ = false;
  if (!stopping_ && !open_poisoned_ && !fenced_)
    if (const std::size_t to = gather_.fill_to(open_.requests, last_size)) let_fill(lock, to);
  out.batch = std::move(open_);
  open_ = std::move(next);
  // A poisoned batch is never written: its requests are certainly not applied. Once fenced,
  // no batch is.
  out.outcome = fenced_          ? CommitResult::Fenced
                : open_poisoned_ ? CommitResult::NotApplied
                                 : CommitResult::Committed;
  open_poisoned_ = false;
  out.ticket = open_ticket_++;
  return true;
}

CommitResult Batcher::write(JournalBatch& batch, Ticket ticket) {
  try {
    write_(batch, ticket);
    return CommitResult::Committed;
  } catch (const leadership::Fenced& e) {
    // Not logged here: `recover` says it once, as the reason the process steps down.
    std::lock_guard<std::mutex> lock(mutex_);
    fenced_ = true;
    fenced_why_ = e.what();
    return CommitResult::Fenced;
  } catch (const CommitOutcomeUnknown& e) {
    EXCHANGE_LOG(error) << "writing batch " << ticket << ": " << e.what();
    return CommitResult::Unknown;
  } catch (const std::exception& e) {
    EXCHANGE_LOG(error) << "writing batch " << ticket << " failed: " << e.what();
    return CommitResult::NotApplied;
  }
}

void Batcher::fail_proof(Ticket ticket, CommitResult outcome) {
  std::vector<std::pair<Ticket, Done>> done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Not a failed range (those are kept, and a flapping database would grow them for ever):
    // only reads wait on a proof, and one that asks later is proven by the next commit, which
    // also starts after it (when_durable).
    failed_proof_through_ = ticket;
    ++stats_.failures;
    done = take_waiters_through(ticket);
  }
  for (auto& [t, d] : done) d(outcome);
}

void Batcher::finish(JournalBatch batch, Ticket ticket,
                     std::chrono::steady_clock::time_point started) {
  const std::size_t requests = batch.requests;
  if (committed_ && !batch.entries.empty()) {
    const std::int64_t through_seq = batch.entries.back().seq;
    DeferredEffects effects = std::move(batch.effects);
    // The payloads are durable now: freed before handing on, which may wait for the projector.
    batch = JournalBatch();
    committed_(std::move(effects), through_seq);
  }
  std::vector<std::pair<Ticket, Done>> done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    committed_through_ = ticket;
    ++stats_.batches;
    if (requests == 0) ++stats_.proofs;
    stats_.requests += requests;
    stats_.write_microseconds += std::chrono::duration_cast<std::chrono::microseconds>(
                                     std::chrono::steady_clock::now() - started)
                                     .count();
    done = take_waiters_through(ticket);
  }
  cycle_started_ns_.store(0, std::memory_order_relaxed);
  for (auto& [t, d] : done) d(CommitResult::Committed);
}

void Batcher::run() {
  // Named for top -H and perf (scripts/profile.sh splits the server's CPU by thread).
  pthread_setname_np(pthread_self(), "exch-commit");
  std::size_t last_size = 0;
  for (;;) {
    // The next open batch, made ready outside the lock: it is likely about the size of the
    // last one, and growing its vectors a doubling at a time cost a reallocation each on the
    // submitting threads (glibc's malloc pays for the large ones with malloc_consolidate).
    JournalBatch next;
    next.entries.reserve(last_size);
    next.effects.reserve(last_size);
    Sealed sealed;
    if (!seal(std::move(next), last_size, sealed)) return;
    last_size = sealed.batch.entries.size();
    cycle_started_ns_.store(steady_ns(), std::memory_order_relaxed);
    const auto started = std::chrono::steady_clock::now();
    CommitResult outcome = sealed.outcome;
    if (outcome == CommitResult::Committed) outcome = write(sealed.batch, sealed.ticket);
    if (outcome != CommitResult::Committed) {
      cycle_started_ns_.store(0, std::memory_order_relaxed);  // the reload reports itself
      // A proof changed nothing: short of a fence, nothing to rebuild.
      if (sealed.batch.empty() && outcome != CommitResult::Fenced) {
        fail_proof(sealed.ticket, outcome);
        continue;
      }
      recover_(*this, sealed.ticket, outcome);
      continue;
    }
    finish(std::move(sealed.batch), sealed.ticket, started);
  }
}

}  // namespace store
