#pragma once
// Slows down key guessing. Failed logons are counted per (address group, name) and per address
// group (auth/address_group.hpp): a name tried --logon-max-failures times from a group, or any
// names tried --logon-max-group-failures times in all, is refused without its key being looked
// at until --logon-lockout-ms after the last failure that counted. A successful logon forgets
// only its own (group, name) count, so holding one good key buys no guesses at another's.
// Failures further apart than the lockout never add up.
//
// Memory is bounded (max_tracked records) without letting anyone evict a record that still
// counts: only records whose lockout is over are forgotten, oldest first (they are kept in the
// order of their last failure, so that costs nothing per failure). When the table is full of
// live records, a failure that finds no room for its record is counted per name alone, and only
// for names of principals (a name nobody holds cannot be guessed into): at --logon-max-failures
// that name is refused from every group the table does not hold. So a flood from new addresses
// never unlocks the flooder's own records, and locks out only the names it guesses at. That
// overflow holds at most one record per principal. Certificates are never throttled.
// Thread-safe.
#include <chrono>
#include <cstddef>
#include <list>
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
  // `listed`: the name is a principal's (counted even when the table is full).
  void failed(const std::string& group, std::string_view name, bool listed, Clock::time_point now);
  // A logon of `name` from `group` succeeded: that pair's failures are forgotten, the group's not.
  void succeeded(const std::string& group, std::string_view name);
  // Records held now (groups and pairs; the overflow's per-name records not included).
  std::size_t tracked() const;

 private:
  struct Record {
    unsigned failures = 0;
    Clock::time_point last;
    std::list<const std::string*>::iterator in_order;  // its place in order_
  };
  // The key of a (group, name) record; a group's own record is keyed by the group alone (no
  // group holds a NUL).
  static std::string pair_key(const std::string& group, std::string_view name);
  // Whether `r` has `limit` failures within the lockout.
  bool locks(const Record& r, unsigned limit, Clock::time_point now) const;
  // Counts a failure in `key`'s record; false when there is no room for a new one.
  bool count(const std::string& key, Clock::time_point now);
  void add_failure(Record& r, Clock::time_point now) const;
  // Forgets records whose lockout is over, oldest first.
  void forget_expired(Clock::time_point now);
  void erase(std::unordered_map<std::string, Record>::iterator it);

  const Options options_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Record> records_;
  std::list<const std::string*> order_;  // records_' keys, by last failure, oldest first
  // Failures of principals' names that found the table full, by name.
  std::unordered_map<std::string, Record> overflow_;
};

}  // namespace auth
