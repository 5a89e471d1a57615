// Leadership's state machine (server/leadership/state.hpp) driven by a manual clock: the order
// a takeover must keep, the lease's expiry, and fencing, without PostgreSQL.
#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "leadership/state.hpp"
#include "support/manual_clock.hpp"

using leadership::Leadership;
using leadership::State;
using namespace std::chrono_literals;

namespace {

// Granted and bumped to `epoch` at the clock's now.
void lead(Leadership& l, const test::ManualClock& clock, std::int64_t epoch = 7) {
  l.lock_granted();
  l.epoch_bumped(epoch, clock.now());
}

}  // namespace

TEST_CASE("leadership takeover: the lock, then the epoch bump, then leading") {
  test::ManualClock clock;
  Leadership l(5000ms, clock);
  CHECK(l.state() == State::Queued);
  CHECK_FALSE(l.lease_valid());
  // A bump before the lock is ours would fence the holder without holding the lock.
  CHECK_THROWS_AS(l.epoch_bumped(3, clock.now()), std::logic_error);
  l.lock_granted();
  CHECK(l.state() == State::Holding);
  CHECK_FALSE(l.lease_valid());  // nothing may be served before the bump
  CHECK(l.epoch_bumped(8, clock.now()).epoch == 8);
  CHECK(l.state() == State::Leading);
  CHECK(l.token().epoch == 8);
  CHECK(l.lease_valid());
}

TEST_CASE("leadership takeover: a standby whose queued session broke queues again") {
  test::ManualClock clock;
  Leadership l(5000ms, clock);
  l.session_lost();
  CHECK(l.state() == State::Queued);
  CHECK_THROWS_AS(l.lock_retaken(), std::logic_error);  // retaking is a leader's
  CHECK_THROWS_AS(l.lease_renewed(clock.now()), std::logic_error);
}

TEST_CASE("leadership lease: runs out a lease after the bump was sent unless renewed") {
  test::ManualClock clock;
  Leadership l(3000ms, clock);
  const auto sent = clock.now();
  clock.advance(400ms);  // the bump's round trip: the lease counts from when it was sent
  l.lock_granted();
  l.epoch_bumped(2, sent);
  clock.advance(2599ms);
  CHECK(l.lease_valid());
  clock.advance(1ms);
  CHECK_FALSE(l.lease_valid());
  // A renewal sent now restores it for a whole lease from its sending.
  l.lease_renewed(clock.now());
  CHECK(l.lease_valid());
  clock.advance(2999ms);
  CHECK(l.lease_valid());
  clock.advance(1ms);
  CHECK_FALSE(l.lease_valid());
  CHECK(l.renew_every() == 1000ms);
}

TEST_CASE("leadership lease: a lost lock session lets the lease run out until retaken") {
  test::ManualClock clock;
  Leadership l(3000ms, clock);
  lead(l, clock);
  clock.advance(1000ms);
  l.session_lost();
  CHECK(l.state() == State::Retaking);
  CHECK(l.lease_valid());  // still ours for what is left of it
  CHECK_THROWS_AS(l.lease_renewed(clock.now()), std::logic_error);  // no session to renew on
  clock.advance(2000ms);
  CHECK_FALSE(l.lease_valid());
  l.lock_retaken();
  CHECK(l.state() == State::Leading);
  CHECK_FALSE(l.lease_valid());  // retaking alone does not renew it
  // Retaken, then the renewal fails: the keeper takes the session as lost again.
  l.session_lost();
  CHECK(l.state() == State::Retaking);
  l.lock_retaken();
  l.lease_renewed(clock.now());
  CHECK(l.lease_valid());
  CHECK(l.token().epoch == 7);  // the same epoch: nobody held the lock meanwhile
}

TEST_CASE("leadership lease: a lock session known to have ended takes the lease with it") {
  // PostgreSQL ended it (or the network reset it): a standby queued behind it holds the lock
  // now and may serve at once, so this server must not answer even reads from memory.
  test::ManualClock clock;
  Leadership l(3000ms, clock);
  lead(l, clock);
  clock.advance(100ms);
  REQUIRE(l.lease_valid());
  l.session_lost(Leadership::Loss::Ended);
  CHECK(l.state() == State::Retaking);
  CHECK_FALSE(l.lease_valid());  // at once, not 2.9 s later
  l.lock_retaken();
  CHECK_FALSE(l.lease_valid());  // until a renewal is accepted again
  l.lease_renewed(clock.now());
  CHECK(l.lease_valid());
}

TEST_CASE("leadership fencing: lost to another writer is final and told once") {
  test::ManualClock clock;
  Leadership l(3000ms, clock);
  std::vector<std::string> told;
  l.on_fenced([&](const std::string& why) { told.push_back(why); });
  lead(l, clock);
  REQUIRE(l.lease_valid());
  l.lost_to_another("another server took over the database (epoch 8)");
  CHECK(l.state() == State::Fenced);
  CHECK_FALSE(l.lease_valid());  // at once, not when the lease runs out
  l.lost_to_another("told again");
  REQUIRE(told.size() == 1);
  CHECK(told[0] == "another server took over the database (epoch 8)");
  // No way back: not by renewing, retaking or bumping.
  CHECK_THROWS_AS(l.lease_renewed(clock.now()), std::logic_error);
  CHECK_THROWS_AS(l.lock_retaken(), std::logic_error);
  CHECK_THROWS_AS(l.epoch_bumped(9, clock.now()), std::logic_error);
  CHECK_FALSE(l.lease_valid());
  l.release();
  CHECK(l.state() == State::Released);
}

TEST_CASE("leadership fencing: while retaking, the lock found with another holder fences") {
  test::ManualClock clock;
  Leadership l(3000ms, clock);
  int told = 0;
  l.on_fenced([&](const std::string&) { ++told; });
  lead(l, clock);
  l.session_lost();
  l.lost_to_another("held by backend pid 42");
  CHECK(l.state() == State::Fenced);
  CHECK(told == 1);
}

TEST_CASE("leadership release: a stopping process holds nothing and serves nothing") {
  test::ManualClock clock;
  Leadership l(3000ms, clock);
  lead(l, clock);
  l.release();
  CHECK(l.state() == State::Released);
  CHECK_FALSE(l.lease_valid());
  CHECK_THROWS_AS(l.lease_renewed(clock.now()), std::logic_error);
}

TEST_CASE(
    "leadership transitions: one table, each state reached, the final ones left only "
    "by release") {
  std::vector<State> reached;
  for (auto t = leadership::transitions_begin(); t != leadership::transitions_end(); ++t) {
    reached.push_back(t->to);
    CHECK(t->from != State::Released);
    if (t->from == State::Fenced) CHECK(t->to == State::Fenced);
  }
  for (State s : {State::Queued, State::Holding, State::Leading, State::Retaking, State::Fenced})
    CHECK(std::find(reached.begin(), reached.end(), s) != reached.end());
}
