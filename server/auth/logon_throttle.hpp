#pragma once
// Slows down key guessing: an address with --logon-max-failures failed logons within
// --logon-lockout-ms is refused without its key being looked at until that long after its last
// failure. Bounded memory: at most max_tracked addresses are remembered (the oldest are
// forgotten first). Thread-safe.
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace auth {

class LogonThrottle {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    unsigned max_failures = 5;                 // --logon-max-failures; 0: never locks out
    std::chrono::milliseconds lockout{60000};  // --logon-lockout-ms
    std::size_t max_tracked = 10000;
  };

  explicit LogonThrottle(Options options) : options_(options) {}

  // Whether logons from `address` (an IP, no port) are refused now.
  bool locked_out(const std::string& address, Clock::time_point now);
  // A logon from `address` failed (a wrong key, an unknown name).
  void failed(const std::string& address, Clock::time_point now);
  // A logon from `address` succeeded: its failures are forgotten.
  void succeeded(const std::string& address);
  // Addresses remembered now.
  std::size_t tracked() const;

 private:
  struct Record {
    unsigned failures = 0;
    Clock::time_point last;
  };
  // Forgets records whose lockout is over; then, if still full, the oldest.
  void make_room(Clock::time_point now);

  const Options options_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Record> records_;
};

}  // namespace auth
