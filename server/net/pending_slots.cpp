#include "net/pending_slots.hpp"

#include <algorithm>
#include <iterator>
#include <optional>
#include <utility>

namespace net {

PendingSlots::PendingSlots(std::size_t max_open, std::size_t max_pending,
                           std::chrono::milliseconds logon_timeout)
    : max_open_(max_open), max_pending_(max_pending), logon_timeout_(logon_timeout) {}

PendingSlots::Slot PendingSlots::admit() {
  std::unique_lock<std::mutex> lock(mutex_);
  const bool full = pending_.size() + authenticated_.size() >= max_open_;
  if (full && pending_.empty()) return {};
  std::function<void()> close;
  std::optional<Holders::iterator> evicted;
  if (full || pending_.size() >= max_pending_) evicted = evict_oldest(close);
  pending_.emplace_back();
  Slot slot(shared_from_this(), std::prev(pending_.end()), Clock::now() + logon_timeout_);
  lock.unlock();
  if (evicted) run_close(*evicted, close);
  return slot;
}

PendingSlots::Holders::iterator PendingSlots::evict_oldest(std::function<void()>& close) {
  const auto holder = pending_.begin();
  holder->state = Holder::State::Evicted;
  close = std::move(holder->close);
  holder->closing = static_cast<bool>(close);
  evicted_.splice(evicted_.end(), pending_, holder);
  ++evictions_;
  return holder;
}

void PendingSlots::run_close(Holders::iterator holder, std::function<void()>& close) {
  if (!close) return;  // none yet: on_close() calls it
  // Also when it throws: a release() waiting for it must not wait for ever.
  struct Done {
    PendingSlots& slots;
    Holders::iterator holder;
    ~Done() {
      {
        std::lock_guard<std::mutex> lock(slots.mutex_);
        holder->closing = false;
      }
      slots.closed_.notify_all();
    }
  } done{*this, holder};
  close();
}

void PendingSlots::on_close(Holders::iterator holder, std::function<void()> close) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (holder->state != Holder::State::Evicted) {
      holder->close = std::move(close);
      return;
    }
  }
  close();  // evicted before it could be told how: it closes now
}

bool PendingSlots::authenticate(Holders::iterator holder) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (holder->state == Holder::State::Evicted) return false;
  if (holder->state == Holder::State::Pending) {
    holder->state = Holder::State::Authenticated;
    holder->close = nullptr;  // never called now: whatever it holds goes
    authenticated_.splice(authenticated_.end(), pending_, holder);
  }
  return true;
}

void PendingSlots::release(Holders::iterator holder) {
  std::unique_lock<std::mutex> lock(mutex_);
  closed_.wait(lock, [&] { return !holder->closing; });
  switch (holder->state) {
    case Holder::State::Pending:
      pending_.erase(holder);
      break;
    case Holder::State::Authenticated:
      authenticated_.erase(holder);
      break;
    case Holder::State::Evicted:
      evicted_.erase(holder);
      break;
  }
}

std::size_t PendingSlots::open() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_.size() + authenticated_.size();
}

std::size_t PendingSlots::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_.size();
}

std::uint64_t PendingSlots::evicted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return evictions_;
}

PendingSlots::Slot& PendingSlots::Slot::operator=(Slot&& other) noexcept {
  if (this == &other) return *this;
  release();
  owner_ = std::move(other.owner_);
  other.owner_.reset();
  holder_ = other.holder_;
  pending_until_ = other.pending_until_;
  pending_ = other.pending_;
  return *this;
}

void PendingSlots::Slot::on_close(std::function<void()> close) {
  if (owner_) owner_->on_close(holder_, std::move(close));
}

bool PendingSlots::Slot::authenticated() {
  if (!owner_ || !pending_) return true;
  if (!owner_->authenticate(holder_)) return false;
  pending_ = false;
  return true;
}

PendingSlots::Clock::time_point PendingSlots::Slot::deadline(Clock::time_point wanted) const {
  return owner_ && pending_ ? std::min(wanted, pending_until_) : wanted;
}

void PendingSlots::Slot::release() {
  if (!owner_) return;
  owner_->release(holder_);
  owner_.reset();
}

}  // namespace net
