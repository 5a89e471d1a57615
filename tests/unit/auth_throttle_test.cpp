// LogonThrottle (auth/logon_throttle.hpp) and address_group (auth/address_group.hpp): failures
// counted per (group, name) and per group; a success forgets only its own pair; loopback one
// group, IPv6 by /64; a bounded table whose live records no flood can evict.
#include <chrono>
#include <string>

#include <catch2/catch.hpp>

#include "auth/address_group.hpp"
#include "auth/logon_throttle.hpp"

using auth::LogonThrottle;
using std::chrono::milliseconds;

namespace {

const LogonThrottle::Clock::time_point t0 = LogonThrottle::Clock::now();

LogonThrottle::Clock::time_point at(int ms) { return t0 + milliseconds(ms); }

LogonThrottle::Options options(unsigned max_failures, int lockout_ms, std::size_t max_tracked,
                               unsigned max_group_failures = 1000) {
  LogonThrottle::Options o;
  o.max_failures = max_failures;
  o.max_group_failures = max_group_failures;
  o.lockout = milliseconds(lockout_ms);
  o.max_tracked = max_tracked;
  return o;
}

}  // namespace

TEST_CASE("address groups: loopback is one, IPv6 by /64, IPv4 by address", "[unit][auth]") {
  CHECK(auth::address_group("127.0.0.1") == "loopback");
  CHECK(auth::address_group("127.0.1.20") == "loopback");
  CHECK(auth::address_group("127.255.255.254") == "loopback");
  CHECK(auth::address_group("::1") == "loopback");
  CHECK(auth::address_group("::ffff:127.0.0.9") == "loopback");
  CHECK(auth::address_group("::ffff:192.0.2.7") == "192.0.2.7");
  CHECK(auth::address_group("192.0.2.7") == "192.0.2.7");
  CHECK(auth::address_group("192.0.2.8") != auth::address_group("192.0.2.7"));
  CHECK(auth::address_group("2001:db8:1:2::5") == "2001:db8:1:2::/64");
  CHECK(auth::address_group("2001:db8:1:2:ffff:1:2:3") == "2001:db8:1:2::/64");
  CHECK(auth::address_group("2001:db8:1:3::5") == "2001:db8:1:3::/64");
  CHECK(auth::address_group("(peer gone)") == "(peer gone)");
}

TEST_CASE("a name locks after max_failures failures from its group; others do not",
          "[unit][auth]") {
  LogonThrottle throttle(options(3, 1000, 100));
  CHECK_FALSE(throttle.locked_out("10.0.0.1", "ops", at(0)));
  throttle.failed("10.0.0.1", "ops", true, at(0));
  throttle.failed("10.0.0.1", "ops", true, at(10));
  CHECK_FALSE(throttle.locked_out("10.0.0.1", "ops", at(20)));
  throttle.failed("10.0.0.1", "ops", true, at(20));
  CHECK(throttle.locked_out("10.0.0.1", "ops", at(30)));
  CHECK_FALSE(throttle.locked_out("10.0.0.1", "desk-a", at(30)));
  CHECK_FALSE(throttle.locked_out("10.0.0.2", "ops", at(30)));
}

TEST_CASE("a group locks for every name after max_group_failures", "[unit][auth]") {
  LogonThrottle throttle(options(5, 1000, 100, 4));
  for (int i = 0; i < 3; ++i) throttle.failed("loopback", "name" + std::to_string(i), true, at(i));
  CHECK_FALSE(throttle.locked_out("loopback", "desk-a", at(5)));
  throttle.failed("loopback", "name3", true, at(5));
  CHECK(throttle.locked_out("loopback", "desk-a", at(6)));
  CHECK_FALSE(throttle.locked_out("10.0.0.1", "desk-a", at(6)));
  CHECK_FALSE(throttle.locked_out("loopback", "desk-a", at(1005)));
}

// The attack on 6f484b8: holding one good key, 4 wrong guesses for ops then one good logon of
// one's own, ten times, gave 40 guesses and no lockout.
TEST_CASE("a success of one's own does not forgive guesses at another name", "[unit][auth]") {
  LogonThrottle throttle(options(5, 60000, 100, 1000));
  int guesses = 0;
  for (int round = 0; round < 10; ++round) {
    for (int g = 0; g < 4; ++g) {
      if (throttle.locked_out("loopback", "ops", at(guesses))) break;
      throttle.failed("loopback", "ops", true, at(guesses));
      ++guesses;
    }
    throttle.succeeded("loopback", "mallory");
  }
  CHECK(guesses == 5);
  CHECK(throttle.locked_out("loopback", "ops", at(100)));
}

TEST_CASE("a success forgets its own pair's failures, not its group's", "[unit][auth]") {
  LogonThrottle throttle(options(2, 1000, 100, 3));
  throttle.failed("g", "a", true, at(0));
  throttle.succeeded("g", "a");
  throttle.failed("g", "a", true, at(10));
  CHECK_FALSE(throttle.locked_out("g", "a", at(10)));  // one pair failure since the success
  throttle.failed("g", "a", true, at(20));
  CHECK(throttle.locked_out("g", "a", at(20)));  // the group's third failure as well
  throttle.succeeded("g", "a");
  CHECK(throttle.locked_out("g", "b", at(30)));  // the group's count stays
}

TEST_CASE("a lockout ends lockout after the last failure", "[unit][auth]") {
  LogonThrottle throttle(options(2, 1000, 100));
  throttle.failed("a", "n", true, at(0));
  throttle.failed("a", "n", true, at(500));
  CHECK(throttle.locked_out("a", "n", at(1499)));
  CHECK_FALSE(throttle.locked_out("a", "n", at(1500)));
  // The count restarts: one more failure is not yet a lockout, a second is.
  throttle.failed("a", "n", true, at(1600));
  CHECK_FALSE(throttle.locked_out("a", "n", at(1600)));
  throttle.failed("a", "n", true, at(1700));
  CHECK(throttle.locked_out("a", "n", at(1700)));
}

TEST_CASE("failures further apart than the lockout never add up", "[unit][auth]") {
  LogonThrottle throttle(options(2, 100, 100, 2));
  for (int i = 0; i < 10; ++i) {
    throttle.failed("a", "n", true, at(i * 200));
    CHECK_FALSE(throttle.locked_out("a", "n", at(i * 200)));
  }
}

TEST_CASE("max_failures 0 never locks out", "[unit][auth]") {
  LogonThrottle throttle(options(0, 1000, 100, 1));
  for (int i = 0; i < 100; ++i) throttle.failed("a", "n", true, at(i));
  CHECK_FALSE(throttle.locked_out("a", "n", at(100)));
  CHECK(throttle.tracked() == 0);
}

TEST_CASE("a name longer than any principal's is counted by its group only", "[unit][auth]") {
  LogonThrottle throttle(options(2, 1000, 100, 3));
  const std::string long_name(200, 'x');
  throttle.failed("g", long_name, true, at(0));
  throttle.failed("g", long_name, true, at(1));
  CHECK(throttle.tracked() == 1);
  CHECK_FALSE(throttle.locked_out("g", long_name, at(2)));
  throttle.failed("g", long_name, true, at(2));
  CHECK(throttle.locked_out("g", long_name, at(3)));
}

TEST_CASE("the table stays bounded and a flood never evicts a live record", "[unit][auth]") {
  LogonThrottle throttle(options(3, 1000, 16, 1000));
  for (int i = 0; i < 3; ++i) throttle.failed("attacker", "ops", true, at(i));
  REQUIRE(throttle.locked_out("attacker", "ops", at(3)));
  // Flooding from new groups: the table never grows past its bound ...
  for (int i = 0; i < 200; ++i) {
    throttle.failed("10.0.0." + std::to_string(i), "ops", true, at(10 + i));
    REQUIRE(throttle.tracked() <= 16);
  }
  // ... and the attacker's record stays (on 6f484b8 the oldest went first).
  CHECK(throttle.locked_out("attacker", "ops", at(300)));
  // What found no room counted by name: ops is locked out where the table holds no pair for
  // it; a name nobody guessed is not.
  CHECK(throttle.locked_out("10.0.0.199", "ops", at(300)));
  CHECK(throttle.locked_out("192.0.2.1", "ops", at(300)));
  CHECK_FALSE(throttle.locked_out("192.0.2.1", "desk", at(300)));
}

TEST_CASE("failures that find the table full count by name, principals' names only",
          "[unit][auth]") {
  LogonThrottle throttle(options(3, 1000, 4, 1000));
  for (int i = 0; i < 2; ++i) throttle.failed("g" + std::to_string(i), "n", true, at(i));
  REQUIRE(throttle.tracked() == 4);  // two groups, two pairs
  // A name nobody holds is not counted once the table is full: it cannot be guessed into.
  for (int i = 0; i < 10; ++i) throttle.failed("new" + std::to_string(i), "nobody", false, at(5));
  CHECK_FALSE(throttle.locked_out("someone", "nobody", at(6)));
  for (int i = 0; i < 2; ++i) throttle.failed("new" + std::to_string(i), "ops", true, at(10 + i));
  CHECK_FALSE(throttle.locked_out("someone-else", "ops", at(12)));
  throttle.failed("new2", "ops", true, at(12));
  CHECK(throttle.tracked() == 4);
  CHECK(throttle.locked_out("someone-else", "ops", at(20)));
  CHECK_FALSE(throttle.locked_out("someone-else", "desk", at(20)));
  CHECK(throttle.locked_out("g0", "ops", at(20)));      // no pair of its own for ops either
  CHECK_FALSE(throttle.locked_out("g0", "n", at(20)));  // its own pair: 1 failure
  // Once the records' lockout is over they make room again, and the overflow's ends too.
  throttle.failed("later", "n", true, at(2000));
  CHECK(throttle.tracked() == 2);
  CHECK_FALSE(throttle.locked_out("someone-else", "ops", at(2000)));
}

TEST_CASE("without a group limit a full table still limits guesses per name", "[unit][auth]") {
  LogonThrottle throttle(options(3, 1000, 2, 0));
  throttle.failed("g", "filler", true, at(0));  // the group and its pair fill the table
  int refused_unlooked = 0;
  for (int i = 0; i < 20; ++i) {
    if (throttle.locked_out("g", "name" + std::to_string(i % 2), at(1 + i)))
      ++refused_unlooked;
    else
      throttle.failed("g", "name" + std::to_string(i % 2), true, at(1 + i));
  }
  CHECK(refused_unlooked == 14);  // 3 guesses at each of the two names, then locked
}

TEST_CASE("expired records are forgotten, oldest first; live ones never", "[unit][auth]") {
  LogonThrottle throttle(options(2, 1000, 4, 1000));
  // "old" locks at 1 and its lockout ends at 1001; "b" fills the table.
  throttle.failed("old", "n", true, at(0));
  throttle.failed("old", "n", true, at(1));
  throttle.failed("b", "n", true, at(500));
  throttle.failed("b", "n", true, at(501));
  CHECK(throttle.tracked() == 4);
  throttle.failed("e", "n", true, at(900));  // full, nothing expired: "old" stays
  CHECK(throttle.tracked() == 4);
  CHECK(throttle.locked_out("old", "n", at(900)));
  throttle.failed("e", "n", true, at(1100));  // "old" expired: it goes, nobody else
  CHECK(throttle.tracked() == 4);
  CHECK(throttle.locked_out("b", "n", at(1100)));
  CHECK_FALSE(throttle.locked_out("old", "n", at(1100)));
}
