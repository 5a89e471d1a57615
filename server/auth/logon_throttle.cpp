#include "auth/logon_throttle.hpp"

#include <algorithm>
#include <iterator>

#include "auth/principals.hpp"

namespace auth {

std::string LogonThrottle::pair_key(const std::string& group, std::string_view name) {
  std::string key = group;
  key += '\0';
  key += name;
  return key;
}

bool LogonThrottle::locks(const Record& r, unsigned limit, Clock::time_point now) const {
  return limit > 0 && r.failures >= limit && now - r.last < options_.lockout;
}

bool LogonThrottle::locked_out(const std::string& group, std::string_view name,
                               Clock::time_point now) {
  if (options_.max_failures == 0) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto by_group = records_.find(group);
  if (by_group == records_.end()) {
    // Not tracked: covered by the overflow record while the table is full of live records.
    if (locks(overflow_, options_.max_group_failures, now)) return true;
  } else if (locks(by_group->second, options_.max_group_failures, now)) {
    return true;
  }
  // A name no principal can have is counted by its group only.
  if (name.size() > Principals::kMaxNameLength) return false;
  const auto by_name = records_.find(pair_key(group, name));
  return by_name != records_.end() && locks(by_name->second, options_.max_failures, now);
}

void LogonThrottle::failed(const std::string& group, std::string_view name, Clock::time_point now) {
  if (options_.max_failures == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  bool counted = count(group, now);
  if (name.size() <= Principals::kMaxNameLength)
    counted = count(pair_key(group, name), now) && counted;
  if (!counted) add_failure(overflow_, now, options_.lockout);
}

void LogonThrottle::succeeded(const std::string& group, std::string_view name) {
  if (name.size() > Principals::kMaxNameLength) return;
  std::lock_guard<std::mutex> lock(mutex_);
  records_.erase(pair_key(group, name));
}

std::size_t LogonThrottle::tracked() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return records_.size();
}

void LogonThrottle::add_failure(Record& r, Clock::time_point now,
                                std::chrono::milliseconds lockout) {
  if (r.failures > 0 && now - r.last >= lockout) r.failures = 0;  // past the lockout: afresh
  ++r.failures;
  r.last = now;
}

bool LogonThrottle::count(const std::string& key, Clock::time_point now) {
  auto it = records_.find(key);
  if (it == records_.end()) {
    if (records_.size() >= options_.max_tracked) make_room(now);
    if (records_.size() >= options_.max_tracked) return false;
    it = records_.emplace(key, Record{}).first;
  }
  add_failure(it->second, now, options_.lockout);
  return true;
}

void LogonThrottle::make_room(Clock::time_point now) {
  if (now < next_scan_) return;
  Clock::time_point oldest = now;
  for (auto it = records_.begin(); it != records_.end();) {
    if (now - it->second.last >= options_.lockout) {
      it = records_.erase(it);
    } else {
      oldest = std::min(oldest, it->second.last);
      ++it;
    }
  }
  // Full of live records: none can be forgotten before the oldest one's lockout is over.
  next_scan_ =
      records_.size() >= options_.max_tracked ? oldest + options_.lockout : Clock::time_point{};
}

}  // namespace auth
