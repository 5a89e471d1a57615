#pragma once
// Bounds each blocking libpq call by wall time. A call is armed with its connection's socket
// and a limit; if it is still running when the limit passes, a watchdog thread shuts the
// socket down (shutdown(2), SHUT_RDWR), and the blocked call returns at once with a broken
// connection. A statement_timeout would not do: its cancel request travels over the same
// silent network, and a partition delivers neither it nor the answer.
//
// The watchdog keeps its own dup() of the socket while a call is armed, so the descriptor it
// shuts down can never be a number libpq closed and the process reused for something else.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

namespace store {

class Watchdog {
 public:
  // The process's watchdog (its thread starts on first use).
  static Watchdog& shared();

  Watchdog();
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  struct Entry;
  // Disarms when destroyed.
  class Guard {
   public:
    Guard(Watchdog& dog, std::shared_ptr<Entry> entry) : dog_(&dog), entry_(std::move(entry)) {}
    Guard(Guard&& other) noexcept : dog_(other.dog_), entry_(std::move(other.entry_)) {}
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    Guard& operator=(Guard&&) = delete;
    ~Guard();
    // Whether the watchdog shut the socket down (the call took too long, or fire_all()).
    bool fired() const;
    // Whether that was fire_all() rather than the limit.
    bool fired_by_fire_all() const;

   private:
    Watchdog* dog_;
    std::shared_ptr<Entry> entry_;
  };

  // Arms for a call on socket `fd` (PQsocket) that may last `limit`. A negative fd (no
  // connection) is armed but can only be reported as fired.
  Guard arm(int fd, std::chrono::milliseconds limit);
  // Shuts down every armed socket now and every one armed later: for a shutdown whose grace
  // period is over. Irreversible.
  void fire_all();
  // Calls cut short so far (not counting fire_all's).
  std::uint64_t timeouts() const { return timeouts_.load(); }

 private:
  void run();
  void disarm(const std::shared_ptr<Entry>& entry);

  std::mutex mutex_;
  std::condition_variable wake_;
  std::multimap<std::chrono::steady_clock::time_point, std::shared_ptr<Entry>> armed_;
  static constexpr std::chrono::milliseconds kIdleTick{100};
  // Until when the thread sleeps (min while it is awake): arm() wakes it only for an earlier
  // deadline.
  std::chrono::steady_clock::time_point sleeping_until_ =
      std::chrono::steady_clock::time_point::min();
  bool firing_all_ = false;
  bool stopping_ = false;
  std::atomic<std::uint64_t> timeouts_{0};
  std::thread thread_;
};

}  // namespace store
