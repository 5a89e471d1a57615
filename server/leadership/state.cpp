#include "leadership/state.hpp"

#include <algorithm>
#include <iterator>
#include <stdexcept>

namespace leadership {
namespace {

constexpr Transition kTransitions[] = {
    {State::Queued, Event::LockGranted, State::Holding},
    {State::Queued, Event::SessionLost, State::Queued},
    {State::Holding, Event::EpochBumped, State::Leading},
    {State::Leading, Event::LeaseRenewed, State::Leading},
    {State::Leading, Event::SessionLost, State::Retaking},
    {State::Retaking, Event::LockRetaken, State::Leading},
    {State::Holding, Event::LostToAnother, State::Fenced},
    {State::Leading, Event::LostToAnother, State::Fenced},
    {State::Retaking, Event::LostToAnother, State::Fenced},
    {State::Fenced, Event::LostToAnother, State::Fenced},  // told again: nothing more happens
};

std::int64_t ns(Clock::time_point t) { return t.time_since_epoch().count(); }

}  // namespace

const Clock& Clock::steady() {
  struct Steady final : Clock {
    time_point now() const override { return std::chrono::steady_clock::now(); }
  };
  static const Steady clock;
  return clock;
}

const char* name(State s) {
  switch (s) {
    case State::Queued:
      return "queued";
    case State::Holding:
      return "holding";
    case State::Leading:
      return "leading";
    case State::Retaking:
      return "retaking";
    case State::Fenced:
      return "fenced";
    case State::Released:
      return "released";
  }
  return "?";
}

const char* name(Event e) {
  switch (e) {
    case Event::LockGranted:
      return "lock granted";
    case Event::EpochBumped:
      return "epoch bumped";
    case Event::LeaseRenewed:
      return "lease renewed";
    case Event::SessionLost:
      return "session lost";
    case Event::LockRetaken:
      return "lock retaken";
    case Event::LostToAnother:
      return "lost to another";
    case Event::Release:
      return "release";
  }
  return "?";
}

const Transition* transitions_begin() { return std::begin(kTransitions); }
const Transition* transitions_end() { return std::end(kTransitions); }

Leadership::Leadership(std::chrono::milliseconds lease, const Clock& clock)
    : lease_(lease), clock_(clock) {}

void Leadership::on_fenced(FencedFn fn) {
  std::lock_guard<std::mutex> lock(mutex_);
  on_fenced_ = std::move(fn);
}

State Leadership::step(Event event) {
  if (event == Event::Release) return state_ = State::Released;
  for (const Transition& t : kTransitions)
    if (t.from == state_ && t.event == event) return state_ = t.to;
  throw std::logic_error(std::string("leadership: no transition from ") + name(state_) + " on " +
                         name(event));
}

void Leadership::lock_granted() {
  std::lock_guard<std::mutex> lock(mutex_);
  step(Event::LockGranted);
}

FencingToken Leadership::epoch_bumped(std::int64_t epoch, Clock::time_point sent) {
  std::lock_guard<std::mutex> lock(mutex_);
  step(Event::EpochBumped);
  token_ = FencingToken{epoch};
  lease_until_ns_ = ns(sent + lease_);
  return token_;
}

void Leadership::lease_renewed(Clock::time_point sent) {
  std::lock_guard<std::mutex> lock(mutex_);
  step(Event::LeaseRenewed);
  lease_until_ns_ = ns(sent + lease_);
}

void Leadership::session_lost(Loss how) {
  // A session that ended frees the lock in PostgreSQL: a standby queued behind it holds it now
  // and may serve before this lease would run out, so the lease goes with the session. One lost
  // to a failed renewal may still hold the lock on PostgreSQL's side (a silent network): then
  // no one else can take it before the lease runs out, and it is left to run out by itself.
  std::lock_guard<std::mutex> lock(mutex_);
  step(Event::SessionLost);
  if (how == Loss::Ended) lease_until_ns_ = kNever;
}

void Leadership::lock_retaken() {
  std::lock_guard<std::mutex> lock(mutex_);
  step(Event::LockRetaken);
}

void Leadership::lost_to_another(const std::string& why) {
  FencedFn fn;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    step(Event::LostToAnother);
    lease_until_ns_ = kNever;
    fn = std::move(on_fenced_);
    on_fenced_ = nullptr;
  }
  if (fn) fn(why);
}

void Leadership::release() {
  std::lock_guard<std::mutex> lock(mutex_);
  step(Event::Release);
  lease_until_ns_ = kNever;
}

State Leadership::state() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_;
}

FencingToken Leadership::token() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return token_;
}

bool Leadership::lease_valid() const {
  const std::int64_t until = lease_until_ns_.load(std::memory_order_relaxed);
  return until != kNever && ns(clock_.now()) < until;
}

std::chrono::milliseconds Leadership::renew_every() const {
  return std::max(lease_ / 3, std::chrono::milliseconds(1));
}

}  // namespace leadership
