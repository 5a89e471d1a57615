// LogonThrottle (auth/logon_throttle.hpp): an address locks after max_failures failures, unlocks
// a lockout after its last failure, is forgiven by a success; the table stays bounded.
#include <chrono>
#include <string>

#include <catch2/catch.hpp>

#include "auth/logon_throttle.hpp"

using auth::LogonThrottle;
using std::chrono::milliseconds;

namespace {

const LogonThrottle::Clock::time_point t0 = LogonThrottle::Clock::now();

LogonThrottle::Clock::time_point at(int ms) { return t0 + milliseconds(ms); }

LogonThrottle::Options options(unsigned max_failures, int lockout_ms, std::size_t max_tracked) {
  LogonThrottle::Options o;
  o.max_failures = max_failures;
  o.lockout = milliseconds(lockout_ms);
  o.max_tracked = max_tracked;
  return o;
}

}  // namespace

TEST_CASE("an address locks after max_failures failures, others do not", "[unit][auth]") {
  LogonThrottle throttle(options(3, 1000, 100));
  CHECK_FALSE(throttle.locked_out("10.0.0.1", at(0)));
  throttle.failed("10.0.0.1", at(0));
  throttle.failed("10.0.0.1", at(10));
  CHECK_FALSE(throttle.locked_out("10.0.0.1", at(20)));
  throttle.failed("10.0.0.1", at(20));
  CHECK(throttle.locked_out("10.0.0.1", at(30)));
  CHECK_FALSE(throttle.locked_out("10.0.0.2", at(30)));
}

TEST_CASE("a lockout ends lockout after the last failure", "[unit][auth]") {
  LogonThrottle throttle(options(2, 1000, 100));
  throttle.failed("a", at(0));
  throttle.failed("a", at(500));
  CHECK(throttle.locked_out("a", at(1499)));
  CHECK_FALSE(throttle.locked_out("a", at(1500)));
  // The count restarts: one more failure is not yet a lockout, a second is.
  throttle.failed("a", at(1600));
  CHECK_FALSE(throttle.locked_out("a", at(1600)));
  throttle.failed("a", at(1700));
  CHECK(throttle.locked_out("a", at(1700)));
}

TEST_CASE("failures further apart than the lockout never add up", "[unit][auth]") {
  LogonThrottle throttle(options(2, 100, 100));
  for (int i = 0; i < 10; ++i) {
    throttle.failed("a", at(i * 200));
    CHECK_FALSE(throttle.locked_out("a", at(i * 200)));
  }
}

TEST_CASE("a success forgets the address's failures", "[unit][auth]") {
  LogonThrottle throttle(options(2, 1000, 100));
  throttle.failed("a", at(0));
  throttle.succeeded("a");
  CHECK(throttle.tracked() == 0);
  throttle.failed("a", at(10));
  CHECK_FALSE(throttle.locked_out("a", at(10)));
  throttle.failed("a", at(20));
  CHECK(throttle.locked_out("a", at(20)));
  // Even a locked-out address: the gate never asks, but the record goes.
  throttle.succeeded("a");
  CHECK_FALSE(throttle.locked_out("a", at(30)));
}

TEST_CASE("max_failures 0 never locks out", "[unit][auth]") {
  LogonThrottle throttle(options(0, 1000, 100));
  for (int i = 0; i < 100; ++i) throttle.failed("a", at(i));
  CHECK_FALSE(throttle.locked_out("a", at(100)));
}

TEST_CASE("at most max_tracked addresses are remembered", "[unit][auth]") {
  LogonThrottle throttle(options(2, 1000, 16));
  for (int i = 0; i < 200; ++i) {
    throttle.failed("10.0.0." + std::to_string(i), at(i));
    REQUIRE(throttle.tracked() <= 16);
  }
  CHECK(throttle.tracked() > 0);
  // The newest is kept (the oldest went first) and still counts toward its lockout.
  throttle.failed("10.0.0.199", at(200));
  CHECK(throttle.locked_out("10.0.0.199", at(201)));
}

TEST_CASE("making room forgets expired records before recent ones", "[unit][auth]") {
  LogonThrottle throttle(options(2, 1000, 4));
  // "old" locks at 0 and its lockout ends at 1001; three recent ones fill the table.
  throttle.failed("old", at(0));
  throttle.failed("old", at(1));
  throttle.failed("b", at(1500));
  throttle.failed("b", at(1501));
  throttle.failed("c", at(1600));
  throttle.failed("d", at(1700));
  CHECK(throttle.tracked() == 4);
  throttle.failed("e", at(1800));  // full: "old" is expired and goes, nobody else
  CHECK(throttle.tracked() == 4);
  CHECK(throttle.locked_out("b", at(1800)));
}
