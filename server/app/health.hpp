#pragma once
// What /healthz answers: ready while the server serves, its engine is not being reloaded,
// PostgreSQL answered within the last few seconds (a successful group commit counts, and when
// there has been none for a second a pinger thread asks PostgreSQL itself: SELECT 1 on its own
// connection, bounded by --db-timeout-ms, so an idle server is judged as fairly as a busy
// one), and neither the projection nor the group commit is stuck: the oldest journal entry not
// yet projected, and the batch being committed, are younger than `max_lag` (--ready-max-lag-ms).
// A PostgreSQL that answers pings while the projection fails, or while commits wait for it, is
// not healthy.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace app {

// How far the work behind the replies is behind (app::DurableEngine::backlog()).
struct Backlog {
  std::size_t unprojected_rows = 0;
  std::chrono::milliseconds oldest_unprojected{0};
  std::chrono::milliseconds commit_stalled{0};
  std::uint64_t projection_failures_in_a_row = 0;
  std::uint64_t projection_failures_total = 0;
  std::string last_projection_error;
};

class Health {
 public:
  struct Status {
    bool healthy = false;
    std::string reason;  // one line
  };

  Health(std::string conninfo, std::chrono::milliseconds db_timeout,
         std::chrono::milliseconds max_lag = std::chrono::seconds(10),
         std::chrono::milliseconds stale_after = std::chrono::seconds(3));
  ~Health();
  Health(const Health&) = delete;
  Health& operator=(const Health&) = delete;

  // PostgreSQL answered just now (a commit succeeded). Thread-safe, lock-free.
  void database_answered();
  // Starts and stops the pinger.
  void start();
  void stop();

  // `available`: the engine is serving (not reloading); `stopping`: shutdown has begun.
  Status status(bool available, bool stopping, const Backlog& backlog) const;

 private:
  void ping_loop();

  const std::string conninfo_;
  const std::chrono::milliseconds db_timeout_;
  const std::chrono::milliseconds max_lag_;
  const std::chrono::milliseconds stale_after_;
  std::atomic<std::int64_t> last_answer_ns_;  // steady clock
  mutable std::mutex mutex_;
  std::string last_failure_;  // why the last ping failed, empty once one succeeds
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread pinger_;
};

}  // namespace app
