#pragma once
// Slows down key guessing. Failed logons are counted per (address group, name) and per address
// group (auth/address_group.hpp): a name tried --logon-max-failures times from a group, or any
// names tried --logon-max-group-failures times in all, is refused without its key being looked
// at until --logon-lockout-ms after the last failure that counted. A successful logon forgets
// only its own (group, name) count, so holding one good key buys no guesses at another's.
// Failures further apart than the lockout never add up.
//
// Memory is bounded (max_tracked records) without letting anyone evict a record that still
// counts: only records whose lockout is over are forgotten. When the table is full of live
// records, failures from groups and names it does not hold are counted together in one
// overflow record, which locks out every logon it covers at the group limit; so flooding from
// new addresses locks out newcomers' key logons for a while, never unlocks the flooder's own
// records. Certificates are never throttled. Thread-safe.
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace auth {

class LogonThrottle {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    unsigned max_failures = 5;         // per (group, name): --logon-max-failures; 0: never locks
    unsigned max_group_failures = 20;  // per group: --logon-max-group-failures; 0: no group limit
    std::chrono::milliseconds lockout{60000};  // --logon-lockout-ms
    std::size_t max_tracked = 100000;          // --logon-max-tracked
  };

  explicit LogonThrottle(Options options) : options_(options) {}

  // Whether logons of `name` from address group `group` are refused now.
  bool locked_out(const std::string& group, std::string_view name, Clock::time_point now);
  // A logon of `name` from `group` failed (a wrong key, an unknown name, a name without a key).
  void failed(const std::string& group, std::string_view name, Clock::time_point now);
  // A logon of `name` from `group` succeeded: that pair's failures are forgotten, the group's not.
  void succeeded(const std::string& group, std::string_view name);
  // Records held now (groups and pairs; the overflow record not included).
  std::size_t tracked() const;

 private:
  struct Record {
    unsigned failures = 0;
    Clock::time_point last;
  };
  // The key of a (group, name) record; a group's own record is keyed by the group alone (no
  // group holds a NUL).
  static std::string pair_key(const std::string& group, std::string_view name);
  // Whether `r` has `limit` failures within the lockout.
  bool locks(const Record& r, unsigned limit, Clock::time_point now) const;
  // Counts a failure in `key`'s record; false when there is no room for a new one.
  bool count(const std::string& key, Clock::time_point now);
  static void add_failure(Record& r, Clock::time_point now, std::chrono::milliseconds lockout);
  // Called when the table is full: forgets records whose lockout is over. A scan that frees
  // nothing is not repeated before the oldest record can expire.
  void make_room(Clock::time_point now);

  const Options options_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Record> records_;
  Record overflow_;  // failures that found the table full
  Clock::time_point next_scan_{};
};

}  // namespace auth
