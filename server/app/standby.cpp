#include "app/standby.hpp"

#include <algorithm>
#include <stdexcept>

#include "app/replay.hpp"
#include "util/log.hpp"

namespace app {
namespace {

constexpr std::int64_t kReadChunk = 10000;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

Standby::Standby(StandbyOptions options, store::Store& store, const util::StopFlag& stop)
    : options_(std::move(options)),
      store_(store),
      stop_(stop),
      closed_(options_.closed_orders_cached) {}

Standby::~Standby() { stop(); }

store::JournalFollower& Standby::db() {
  if (!db_ || !db_->usable()) db_ = store_.journal_follower();
  return *db_;
}

void Standby::reload(const std::string& why) {
  const auto started = Clock::now();
  std::lock_guard<std::mutex> lock(mutex_);
  engine_.clear();
  closed_.clear();
  unprojected_.clear();
  const std::int64_t position = db().load(engine_);
  projected_seq_ = position;
  applied_seq_ = position;
  ++reloads_;
  EXCHANGE_LOG(info) << "standby: loaded the projection (journal seq " << position << ", "
                     << engine_.order_count() << " orders) in " << seconds_since(started) << " s ("
                     << why << ")";
}

bool Standby::load() {
  const auto started = Clock::now();
  std::string last_error;
  for (;;) {
    if (stop_.requested()) return false;
    try {
      reload("start-up");
      while (poll()) {
      }
      EXCHANGE_LOG(info) << "standby: caught up with the journal at seq " << applied_seq_.load()
                         << " (" << applied_.load() << " entries replayed) "
                         << seconds_since(started) << " s after start";
      return true;
    } catch (const std::exception& e) {
      db_.reset();
      if (last_error != e.what())
        EXCHANGE_LOG(warn) << "standby: loading the state failed: " << e.what()
                           << "; retrying every second (the active server creates the schema)";
      last_error = e.what();
      stop_.sleep_for(std::chrono::seconds(1));
    }
  }
}

bool Standby::poll() {
  const auto asked = Clock::now();
  const std::int64_t applied = applied_seq_;  // only this thread changes it
  store::JournalFollower::Tail tail = db().follow(applied, kReadChunk);
  const store::JournalFollower::Tail& end = tail;
  journal_seq_ = end.last_seq;
  {
    // The projection holds these now: no new leader will have to write them.
    std::lock_guard<std::mutex> lock(mutex_);
    projected_seq_ = end.projected_seq;
    while (!unprojected_.empty() && unprojected_.front().through_seq <= end.projected_seq)
      unprojected_.pop_front();
    closed_.forget_projected(engine_, end.projected_seq);
  }
  if (end.last_seq < applied) {
    reload("the journal ends at seq " + std::to_string(end.last_seq) + ", before seq " +
           std::to_string(applied) + " applied here: it was reset");
    return true;
  }
  if (end.last_seq == applied) {
    caught_up_ns_ = asked.time_since_epoch().count();
    return false;
  }
  std::vector<store::JournalEntry>& entries = tail.entries;
  if (entries.empty() || entries.front().seq != applied + 1) {
    reload("the journal after seq " + std::to_string(applied) +
           " is gone (trimmed by --journal-keep while this standby was behind)");
    return true;
  }
  std::string diverged;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Followed::Chunk chunk{store::DeferredEffects{}, entries.back().seq};
    try {
      for (const store::JournalEntry& entry : entries) {
        market::Effects fx;
        replay_entry(entry, engine_, fx);
        closed_.note(fx, entry.seq);
        chunk.effects.add(std::move(fx));
      }
      unprojected_.push_back(std::move(chunk));
    } catch (const std::exception& e) {
      diverged = e.what();
    }
  }
  if (!diverged.empty()) {
    // The engine is half-changed: start again from the projection.
    EXCHANGE_LOG(error) << "standby: " << diverged;
    reload("after the divergence");
    return true;
  }
  applied_seq_ = entries.back().seq;
  applied_ += entries.size();
  if (entries.back().seq >= end.last_seq) caught_up_ns_ = asked.time_since_epoch().count();
  return static_cast<std::int64_t>(entries.size()) == kReadChunk;
}

void Standby::start() {
  thread_ = std::thread([this] { run(); });
}

void Standby::run() {
  std::string last_error;
  while (!following_stop_.requested() && !stop_.requested()) {
    bool more = false;
    try {
      more = poll();
      if (!last_error.empty()) EXCHANGE_LOG(info) << "standby: following the journal again";
      last_error.clear();
    } catch (const std::exception& e) {
      db_.reset();
      if (last_error != e.what())
        EXCHANGE_LOG(warn) << "standby: following the journal failed: " << e.what()
                           << "; retrying every 100 ms";
      last_error = e.what();
      following_stop_.sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    if (!more) following_stop_.sleep_for(options_.poll_every);
  }
}

void Standby::stop() {
  following_stop_.request();
  if (thread_.joinable()) thread_.join();
}

Followed Standby::take_over() {
  stop();
  const auto started = Clock::now();
  const std::int64_t before = applied_seq_;
  // The epoch is ours: what the journal holds now is all the old writer ever appended.
  try {
    while (poll()) {
    }
  } catch (...) {
    db_.reset();
    throw;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  Followed out;
  out.engine = std::move(engine_);
  out.closed = std::move(closed_);
  out.last_seq = applied_seq_;
  out.projected_seq = projected_seq_;
  out.unprojected = std::move(unprojected_);
  unprojected_.clear();
  closed_ = ClosedOrders(options_.closed_orders_cached);
  engine_ = market::Engine();
  std::size_t rows = 0;
  for (const auto& c : out.unprojected) rows += c.effects.rows();
  EXCHANGE_LOG(info) << "takeover: replayed the journal's tail (" << out.last_seq - before
                     << " entries, to seq " << out.last_seq << ") in "
                     << seconds_since(started) * 1000 << " ms; the projection is at seq "
                     << out.projected_seq << ", " << rows << " rows of " << out.unprojected.size()
                     << " stretches still to project";
  return out;
}

Standby::Lag Standby::lag() const {
  Lag l;
  l.applied_seq = applied_seq_;
  l.journal_seq = journal_seq_;
  l.entries = std::max<std::int64_t>(0, l.journal_seq - l.applied_seq);
  const std::int64_t caught_up = caught_up_ns_;
  if (caught_up != 0)
    l.behind = std::chrono::duration_cast<std::chrono::milliseconds>(
        Clock::now() - Clock::time_point(Clock::duration(caught_up)));
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (lock.owns_lock()) l.orders_resting = static_cast<long>(engine_.open_order_count());
  l.applied = applied_;
  l.reloads = reloads_;
  return l;
}

}  // namespace app
