#pragma once
// A hot standby's engine (exchange-server --standby): loaded as a restart loads it (the
// projection, then the journal after it), then kept milliseconds behind the active server by
// following the journal: a thread asks PostgreSQL every few milliseconds how far the journal
// has got and replays each committed entry with the restart's own replay_entry (same payload,
// same `now`, same order, so the same state; each entry's first_order_id checks it).
//
// At a takeover, once the writer epoch is the standby's (so nothing more can be appended behind
// it), take_over() reads the journal to its end and hands over exactly what a restart at that
// moment would have built: the engine, the closed orders it may forget, the next seq, the
// projection's position, and the effects of every entry after that position, which the new
// leader's projector must still write (the old leader's projector never will). For that the
// standby keeps each replayed stretch's effects until the projection is past it.
//
// If the journal it needs has gone (trimmed by --journal-keep while the standby was behind, or
// emptied by --reset) or a replay diverges, it reloads from the projection.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "app/closed_orders.hpp"
#include "market/engine.hpp"
#include "store/deferred_effects.hpp"
#include "store/ports.hpp"
#include "util/stop_flag.hpp"

namespace app {

struct StandbyOptions {
  std::size_t closed_orders_cached = kDefaultClosedOrdersCached;
  // How long it waits, once it has read the journal to its end, before reading it again
  // (--standby-poll-ms). Each read is one statement on the active server's database, with a
  // cost of its own whatever it carries, so fewer, larger reads cost the active server less
  // (docs/PERFORMANCE.md, "Beyond one machine: a hot standby"). The takeover reads whatever is
  // left, so the interval bounds only the lag and the tail a takeover replays.
  std::chrono::milliseconds poll_every{200};
};

// What a standby hands to the server it becomes (DurableEngine::adopt): the state a restart
// would load now.
struct Followed {
  market::Engine engine;
  ClosedOrders closed{0};
  std::int64_t last_seq = 0;       // the journal's end: new entries continue after it
  std::int64_t projected_seq = 0;  // projection_position.seq, final (the old writer is fenced)
  struct Chunk {
    store::DeferredEffects effects;
    std::int64_t through_seq;  // its last entry
  };
  // In seq order, every chunk with an entry after projected_seq (a chunk that began at or
  // before it is re-projected whole: harmless, rows carry final values).
  std::deque<Chunk> unprojected;
};

class Standby {
 public:
  // `store` opens its journal follower; it must outlive the standby.
  Standby(StandbyOptions options, store::Store& store, const util::StopFlag& stop);
  ~Standby();
  Standby(const Standby&) = delete;
  Standby& operator=(const Standby&) = delete;

  // Loads the projection and catches up with the journal; retries every second while that
  // fails (PostgreSQL away, no schema yet: the active server creates it). Returns false if a
  // stop was requested first.
  bool load();
  // Follows the journal on a thread of its own.
  void start();
  // The writer epoch is ours: stops following, replays the journal to its end and hands the
  // state over (the standby holds nothing afterwards). Throws if PostgreSQL cannot be read
  // (call again).
  Followed take_over();
  // Stops following (idempotent).
  void stop();

  struct Lag {
    std::int64_t applied_seq = 0;  // every journal entry up to this one is applied
    std::int64_t journal_seq = 0;  // the journal's end when last asked
    std::int64_t entries = 0;      // journal_seq - applied_seq
    // How long since it last had every entry committed by then: the staleness of its state.
    std::chrono::milliseconds behind{0};
    long orders_resting = -1;   // -1 while the engine is busy (metrics never wait for it)
    std::uint64_t applied = 0;  // entries replayed since the start
    std::uint64_t reloads = 0;
  };
  Lag lag() const;

 private:
  using Clock = std::chrono::steady_clock;
  void run();
  // One round: how far the journal is, then up to a chunk of entries. True if more may wait.
  bool poll();
  // Empties the engine and loads the projection (under the lock).
  void reload(const std::string& why);
  store::JournalFollower& db();

  StandbyOptions options_;
  store::Store& store_;
  const util::StopFlag& stop_;  // the process's
  util::StopFlag following_stop_;
  std::unique_ptr<store::JournalFollower> db_;  // the following thread's (then take_over()'s)

  mutable std::mutex mutex_;  // guards engine_, closed_, unprojected_
  market::Engine engine_;
  ClosedOrders closed_;
  std::deque<Followed::Chunk> unprojected_;
  std::int64_t projected_seq_ = 0;  // as last read

  std::atomic<std::int64_t> applied_seq_{0};
  std::atomic<std::int64_t> journal_seq_{0};
  std::atomic<std::int64_t> caught_up_ns_{0};  // steady clock: when last fully caught up
  std::atomic<std::uint64_t> applied_{0};
  std::atomic<std::uint64_t> reloads_{0};
  std::thread thread_;
};

}  // namespace app
