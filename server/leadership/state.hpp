#pragma once
// Leadership as an explicit state machine: who may write this database, and for how long.
//
//   Queued   --lock granted------> Holding    the writer lock is ours, the epoch not yet bumped
//   Queued   --session lost------> Queued     (a standby queues again)
//   Holding  --epoch bumped------> Leading    every earlier writer is fenced; the lease runs
//   Leading  --lease renewed-----> Leading
//   Leading  --session lost------> Retaking   the lock's session ended under us
//   Retaking --lock retaken------> Leading    same epoch: nobody held it meanwhile
//   Holding, Leading, Retaking --lost to another--> Fenced   (final: step down; told again,
//                                                           it stays)
//   any      --release-----------> Released   (final: the process is stopping)
//
// The transitions are the one table in state.cpp; an event the table does not allow from the
// current state is a bug and throws std::logic_error. The lease is counted from when the bump
// or renewal that PostgreSQL accepted was *sent* (so the holder never believes in a lease
// PostgreSQL holds expired) and is valid only while Leading or Retaking; a session known to
// have ended withdraws it at once (a standby queued behind it has the lock already). Entering
// Fenced runs the fenced callback once, with why. WriterLock (writer_lock.hpp) drives it against
// PostgreSQL; unit tests drive it with a clock of their own.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "leadership/clock.hpp"
#include "leadership/fencing.hpp"

namespace leadership {

enum class State { Queued, Holding, Leading, Retaking, Fenced, Released };
enum class Event {
  LockGranted,
  EpochBumped,
  LeaseRenewed,
  SessionLost,
  LockRetaken,
  LostToAnother,
  Release
};

const char* name(State s);
const char* name(Event e);

struct Transition {
  State from;
  Event event;
  State to;
};
// Every allowed transition (Release from any state is implied).
const Transition* transitions_begin();
const Transition* transitions_end();

class Leadership {
 public:
  using FencedFn = std::function<void(const std::string& why)>;

  explicit Leadership(std::chrono::milliseconds lease, const Clock& clock = Clock::steady());

  // Runs once, on the thread that reported it, when leadership is lost to another writer.
  void on_fenced(FencedFn fn);

  void lock_granted();
  // The bump sent at `sent` was accepted: epoch `epoch` is ours and so is its lease.
  FencingToken epoch_bumped(std::int64_t epoch, Clock::time_point sent);
  void lease_renewed(Clock::time_point sent);
  // How the lock's session was lost: Ended when its socket reported the end (PostgreSQL ended
  // it, or the network reset it), Unknown when a renewal failed (maybe a silent network).
  enum class Loss { Unknown, Ended };
  void session_lost(Loss how = Loss::Unknown);
  void lock_retaken();
  void lost_to_another(const std::string& why);
  void release();

  State state() const;
  FencingToken token() const;
  // Whether the lease is ours by this clock. Lock-free: asked for every request.
  bool lease_valid() const;
  std::chrono::milliseconds lease() const { return lease_; }
  // Renewals go out every lease/3: two may fail before the lease runs out.
  std::chrono::milliseconds renew_every() const;
  const Clock& clock() const { return clock_; }

 private:
  // Moves to the state the table gives for `event`; throws std::logic_error if none.
  State step(Event event);

  const std::chrono::milliseconds lease_;
  const Clock& clock_;
  mutable std::mutex mutex_;
  State state_ = State::Queued;
  FencingToken token_;
  FencedFn on_fenced_;
  // Clock nanoseconds until which the lease is ours; kNever while it is not.
  static constexpr std::int64_t kNever = INT64_MIN;
  std::atomic<std::int64_t> lease_until_ns_{kNever};
};

}  // namespace leadership
