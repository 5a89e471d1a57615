#pragma once
// Keeps large requests from crowding out everyone else (issue 20, findings 8 and 10).
//
// A request of at least `heavy_bytes` is heavy: parsing and applying it holds the engine for
// milliseconds, and its journal entry is most of a group commit. Heavy requests therefore run
// one at a time on a thread of their own (never on an event loop or a pool worker that light
// requests need), and only while the heavy bytes started and not yet answered stay within
// `in_flight_bytes` (one heavy request may always run). That bounds the journal bytes heavy
// requests add to a group commit, so a commit stays well inside --db-timeout-ms and a light
// request waits for at most that much ahead of it. Heavy requests that cannot start yet wait
// in order, up to `queued_bytes`; past that they are refused at once ("Server busy"), before
// anything is parsed or journaled. While `pause` says so (the projection is far behind), none
// starts: the rows they would make wait with them, and small requests are not held up. A
// request that has waited `max_wait` without starting (the projection or the database is
// stuck) is refused then, so its client hears within a bound and nothing waits for ever.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace app {

struct HeavyLimits {
  std::size_t heavy_bytes = 16 * 1024;            // --heavy-request-bytes
  std::size_t in_flight_bytes = 8 * 1024 * 1024;  // --max-heavy-bytes-in-flight
  std::size_t queued_bytes = 64 * 1024 * 1024;    // --max-heavy-bytes-queued
  std::chrono::milliseconds max_wait{10000};      // --max-heavy-wait-ms
};

class HeavyRequests {
 public:
  // Runs one heavy request. It must call `finished` exactly once, when the request is answered
  // (from any thread, perhaps before it returns); until then its bytes count as in flight.
  using Finished = std::function<void()>;
  using Run = std::function<void(Finished finished)>;

  // Whether heavy requests must wait before starting (polled while one is waiting).
  using Pause = std::function<bool()>;
  // Why a queued request was refused instead of run.
  enum class Refusal {
    Stopping,       // the server stops before its turn
    WaitedTooLong,  // it waited max_wait without starting
  };
  using Refuse = std::function<void(Refusal)>;

  explicit HeavyRequests(HeavyLimits limits, Pause pause = nullptr);
  // Runs nothing more; requests still waiting are passed to `refuse` of their submit().
  ~HeavyRequests();
  HeavyRequests(const HeavyRequests&) = delete;
  HeavyRequests& operator=(const HeavyRequests&) = delete;

  bool is_heavy(std::size_t bytes) const { return bytes >= limits_.heavy_bytes; }
  // Queues a heavy request of `bytes`: `run` later, on the heavy thread; or false at once when
  // the queue is full (the caller refuses it). `refuse` runs instead of `run` (on the heavy
  // thread, or the destroying one) if it waits too long or the server stops before its turn.
  // Thread-safe.
  bool submit(std::size_t bytes, Run run, Refuse refuse);

  struct Counts {
    std::size_t queued = 0, queued_bytes = 0, in_flight_bytes = 0;
    std::uint64_t refused = 0;
    bool paused = false;  // waiting for `pause` to clear
  };
  Counts counts() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Waiting {
    std::size_t bytes;
    Run run;
    Refuse refuse;
    Clock::time_point deadline;  // refused if not started by then
  };
  // Shared with every Finished handed out: a reply may go out after this object is gone.
  struct State {
    std::mutex mutex;
    std::condition_variable wake;
    std::deque<Waiting> queue;
    std::size_t queued_bytes = 0;
    std::size_t in_flight_bytes = 0;
    std::uint64_t refused = 0;
    bool paused = false;
    bool stopping = false;
  };
  void loop();
  // Refuses the waiting requests past their deadline (the oldest are first). Called and
  // returns with `lock` held; unlocks it while refusing.
  void refuse_overdue(std::unique_lock<std::mutex>& lock);

  const HeavyLimits limits_;
  const Pause pause_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
  std::thread thread_;  // last: started once everything above is ready
};

}  // namespace app
