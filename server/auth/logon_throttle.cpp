#include "auth/logon_throttle.hpp"

#include <algorithm>
#include <iterator>
#include <vector>

namespace auth {

bool LogonThrottle::locked_out(const std::string& address, Clock::time_point now) {
  if (options_.max_failures == 0) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = records_.find(address);
  if (it == records_.end()) return false;
  const Record& r = it->second;
  return r.failures >= options_.max_failures && now - r.last < options_.lockout;
}

void LogonThrottle::failed(const std::string& address, Clock::time_point now) {
  // Nothing to lock out, or no room to remember anyone: nothing to count.
  if (options_.max_failures == 0 || options_.max_tracked == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = records_.find(address);
  if (it == records_.end()) {
    if (records_.size() >= options_.max_tracked) make_room(now);
    it = records_.emplace(address, Record{}).first;
  } else if (now - it->second.last >= options_.lockout) {
    it->second.failures = 0;  // the last failure is past the lockout: count afresh
  }
  ++it->second.failures;
  it->second.last = now;
}

void LogonThrottle::succeeded(const std::string& address) {
  std::lock_guard<std::mutex> lock(mutex_);
  records_.erase(address);
}

std::size_t LogonThrottle::tracked() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return records_.size();
}

// Called with the mutex held when the table is full. When every record is recent (many
// addresses failing at once), it forgets the oldest eighth rather than one, so the scan is
// paid once per max_tracked / 8 new addresses, not on each.
void LogonThrottle::make_room(Clock::time_point now) {
  for (auto it = records_.begin(); it != records_.end();) {
    it = now - it->second.last >= options_.lockout ? records_.erase(it) : std::next(it);
  }
  if (records_.size() < options_.max_tracked) return;
  std::vector<Clock::time_point> lasts;
  lasts.reserve(records_.size());
  for (const auto& [address, record] : records_) lasts.push_back(record.last);
  const std::size_t drop = std::max<std::size_t>(1, records_.size() / 8);
  std::nth_element(lasts.begin(), lasts.begin() + (drop - 1), lasts.end());
  const Clock::time_point cutoff = lasts[drop - 1];  // the drop-th oldest failure
  for (auto it = records_.begin(); it != records_.end();) {
    it = it->second.last <= cutoff ? records_.erase(it) : std::next(it);
  }
}

}  // namespace auth
