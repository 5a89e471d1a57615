#pragma once
// The trading port's slots (--max-connections), and who gives way when they run out. A
// connection is pending from its accept until it authenticates (a principal with --principals;
// its first request framed without): holding sockets open costs nothing, so ten idle ones must
// not keep everyone else out for the read timeout. As on the admin port (admin_slots.hpp), a
// newcomer takes the slot of the OLDEST pending connection when the pending ones reach their
// own cap (--max-pending-connections) or all of them reach --max-connections; it is refused
// "Server busy" only when every open connection is authenticated. Authenticated connections
// never give way. A pending connection also has one deadline for the whole pending phase
// (--logon-timeout-ms from its accept), whatever its read deadline would be.
//
// Thread-safe: one instance per listener (made with std::make_shared), shared by the accepting
// thread and every connection, whichever driver runs it. Close callbacks run outside the lock.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>

namespace net {

class PendingSlots : public std::enable_shared_from_this<PendingSlots> {
  struct Holder;
  using Holders = std::list<Holder>;

 public:
  using Clock = std::chrono::steady_clock;
  class Slot;

  PendingSlots(std::size_t max_open, std::size_t max_pending,
               std::chrono::milliseconds logon_timeout);
  PendingSlots(const PendingSlots&) = delete;
  PendingSlots& operator=(const PendingSlots&) = delete;

  // A pending slot for a connection accepted now. At a cap the oldest pending connection is
  // closed first (its callback, on this thread); empty when --max-connections are open and all
  // of them authenticated: refuse the newcomer.
  Slot admit();

  std::size_t open() const;     // slots held, pending or not
  std::size_t pending() const;  // of those, not yet authenticated
  std::uint64_t evicted() const;

 private:
  // Under the lock: the oldest pending holder, out of the count, its callback taken out.
  Holders::iterator evict_oldest(std::function<void()>& close);
  // Runs an evicted holder's callback; release() of that slot waits until it has returned.
  void run_close(Holders::iterator holder, std::function<void()>& close);
  void on_close(Holders::iterator holder, std::function<void()> close);
  bool authenticate(Holders::iterator holder);
  void release(Holders::iterator holder);

  const std::size_t max_open_;
  const std::size_t max_pending_;
  const std::chrono::milliseconds logon_timeout_;
  mutable std::mutex mutex_;
  std::condition_variable closed_;  // an evicted holder's callback returned
  Holders pending_;                 // oldest first
  Holders authenticated_;
  Holders evicted_;  // out of the count, until their connection releases them
  std::uint64_t evictions_ = 0;
};

struct PendingSlots::Holder {
  std::function<void()> close;
  enum class State { Pending, Authenticated, Evicted } state = State::Pending;
  bool closing = false;  // its callback is running
};

// One connection's slot, used by that connection alone; released when destroyed. An empty
// Slot tracks nothing: it never closes, is authenticated, and keeps every deadline.
class PendingSlots::Slot {
 public:
  Slot() = default;
  Slot(Slot&& other) noexcept { *this = std::move(other); }
  Slot& operator=(Slot&& other) noexcept;
  ~Slot() { release(); }

  explicit operator bool() const { return owner_ != nullptr; }
  // How to close this connection if it is evicted: called once, from any thread (at once if it
  // was evicted already). It must only start the close, never release this slot itself.
  void on_close(std::function<void()> close);
  // The connection authenticated: it is no longer pending and never evicted. False if it was
  // evicted first: it is being closed, and must serve nothing.
  bool authenticated();
  // `wanted`, but no later than --logon-timeout-ms after the accept while still pending.
  Clock::time_point deadline(Clock::time_point wanted) const;
  // The connection closed: the slot is free. Waits for an eviction's callback still running on
  // another thread, so what that uses (a descriptor) may go once this returns.
  void release();

 private:
  friend class PendingSlots;
  Slot(std::shared_ptr<PendingSlots> owner, Holders::iterator holder, Clock::time_point until)
      : owner_(std::move(owner)), holder_(holder), pending_until_(until) {}

  std::shared_ptr<PendingSlots> owner_;
  Holders::iterator holder_;
  Clock::time_point pending_until_;
  bool pending_ = true;
};

}  // namespace net
