#include "auth/logon_throttle.hpp"

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
  if (by_group != records_.end() && locks(by_group->second, options_.max_group_failures, now))
    return true;
  // A name no principal can have is counted by its group only.
  if (name.size() > Principals::kMaxNameLength) return false;
  const auto by_name = records_.find(pair_key(group, name));
  if (by_name != records_.end()) return locks(by_name->second, options_.max_failures, now);
  // No record of the pair: its failures, if any, went to the overflow.
  const auto overflowed = overflow_.find(std::string(name));
  return overflowed != overflow_.end() && locks(overflowed->second, options_.max_failures, now);
}

void LogonThrottle::failed(const std::string& group, std::string_view name, bool listed,
                           Clock::time_point now) {
  if (options_.max_failures == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  forget_expired(now);
  count(group, now);  // no room: the group goes uncounted, its names are still
  if (name.size() > Principals::kMaxNameLength) return;
  if (count(pair_key(group, name), now) || !listed) return;
  // The table is full of live records: counted by name, for principals only.
  auto it = overflow_.find(std::string(name));
  if (it == overflow_.end()) {
    if (overflow_.size() >= options_.max_tracked) {
      for (auto o = overflow_.begin(); o != overflow_.end();)
        o = now - o->second.last >= options_.lockout ? overflow_.erase(o) : std::next(o);
      if (overflow_.size() >= options_.max_tracked) return;
    }
    it = overflow_.emplace(std::string(name), Record{}).first;
  }
  add_failure(it->second, now);
}

void LogonThrottle::succeeded(const std::string& group, std::string_view name) {
  if (name.size() > Principals::kMaxNameLength) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = records_.find(pair_key(group, name));
  if (it != records_.end()) erase(it);
}

std::size_t LogonThrottle::tracked() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return records_.size();
}

void LogonThrottle::add_failure(Record& r, Clock::time_point now) const {
  if (r.failures > 0 && now - r.last >= options_.lockout) r.failures = 0;  // past it: afresh
  ++r.failures;
  r.last = now;
}

bool LogonThrottle::count(const std::string& key, Clock::time_point now) {
  auto it = records_.find(key);
  if (it == records_.end()) {
    if (records_.size() >= options_.max_tracked) return false;
    it = records_.emplace(key, Record{}).first;
    it->second.in_order = order_.insert(order_.end(), &it->first);
  } else {
    order_.splice(order_.end(), order_, it->second.in_order);  // now the newest
  }
  add_failure(it->second, now);
  return true;
}

void LogonThrottle::forget_expired(Clock::time_point now) {
  while (!order_.empty()) {
    const auto it = records_.find(*order_.front());
    if (now - it->second.last < options_.lockout) return;
    erase(it);
  }
}

void LogonThrottle::erase(std::unordered_map<std::string, Record>::iterator it) {
  order_.erase(it->second.in_order);
  records_.erase(it);
}

}  // namespace auth
