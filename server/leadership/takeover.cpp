#include "leadership/takeover.hpp"

#include <algorithm>
#include <chrono>
#include <string>

#include "util/log.hpp"

namespace leadership {

bool wait_for_lock(WriterLock& lock, const std::function<bool()>& stopped,
                   const util::StopFlag& sleep_on) {
  using Steady = std::chrono::steady_clock;
  // The lease is judged often enough that a paused server is replaced soon after it expires.
  const auto check_every =
      std::clamp(lock.lease() / 10, std::chrono::milliseconds(50), std::chrono::milliseconds(500));
  auto next_check = Steady::now();
  std::string last_error;
  bool holding_back = false;  // said so once per outage
  for (;;) {
    if (stopped()) return false;
    try {
      // Returns as soon as PostgreSQL grants it: the wait only bounds how soon a stop is seen.
      if (lock.granted_within(std::chrono::milliseconds(20))) return true;
      if (Steady::now() >= next_check) {
        next_check = Steady::now() + check_every;
        if (auto ended = lock.end_expired_holder())
          EXCHANGE_LOG(warn) << "takeover: " << *ended << "; the writer lock comes next";
      }
      if (!last_error.empty()) EXCHANGE_LOG(info) << "standby: queued for the writer lock again";
      last_error.clear();
    } catch (const std::exception& e) {
      if (last_error != e.what())
        EXCHANGE_LOG(warn) << "standby: waiting for the writer lock failed: " << e.what()
                           << "; queueing again every second";
      last_error = e.what();
      sleep_on.sleep_for(std::chrono::seconds(1));
      try {
        // Its session broke: so, most likely, did the holder's (PostgreSQL restarted or
        // failed over). The holder gets the first chance to take the lock back.
        if (auto wait = lock.hold_back_queueing()) {
          if (!holding_back) EXCHANGE_LOG(info) << "standby: not queueing yet: " << *wait;
          holding_back = true;
        } else {
          lock.queue_again();
          holding_back = false;
        }
      } catch (const std::exception&) {
        // Still away: the next round says so if the reason changes.
      }
    }
  }
}

}  // namespace leadership
