#pragma once
// What /healthz answers: healthy while the server serves, its engine is not being reloaded, and
// PostgreSQL answered within the last few seconds: a successful group commit counts, and when
// there has been none for a second a pinger thread asks PostgreSQL itself (SELECT 1 on its own
// connection, bounded by --db-timeout-ms), so an idle server is judged as fairly as a busy one.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace app {

class Health {
 public:
  struct Status {
    bool healthy = false;
    std::string reason;  // one line
  };

  Health(std::string conninfo, std::chrono::milliseconds db_timeout,
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
  Status status(bool available, bool stopping) const;

 private:
  void ping_loop();

  const std::string conninfo_;
  const std::chrono::milliseconds db_timeout_;
  const std::chrono::milliseconds stale_after_;
  std::atomic<std::int64_t> last_answer_ns_;  // steady clock
  mutable std::mutex mutex_;
  std::string last_failure_;  // why the last ping failed, empty once one succeeds
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread pinger_;
};

}  // namespace app
