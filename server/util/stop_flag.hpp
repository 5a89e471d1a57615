#pragma once
// A shutdown request that waiting loops can see: retry loops sleep on it instead of
// std::this_thread::sleep_for, so a SIGTERM ends the wait at once rather than after the
// current back-off (and a reload loop never outlives a shutdown).
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace util {

class StopFlag {
 public:
  void request() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      requested_ = true;
    }
    wake_.notify_all();
  }
  bool requested() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return requested_;
  }
  // Sleeps for `d` unless a stop is requested first; returns false if it was.
  template <typename Duration>
  bool sleep_for(Duration d) const {
    std::unique_lock<std::mutex> lock(mutex_);
    return !wake_.wait_for(lock, d, [this] { return requested_; });
  }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable wake_;
  bool requested_ = false;
};

}  // namespace util
