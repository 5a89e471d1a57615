#include "store/watchdog.hpp"

#include <sys/socket.h>
#include <unistd.h>

namespace store {

struct Watchdog::Entry {
  int fd = -1;  // our own dup of the connection's socket, closed on disarm
  std::atomic<bool> fired{false};
  std::atomic<bool> by_fire_all{false};
};

namespace {

void shut(Watchdog::Entry& e) {
  // Marked first: the blocked call wakes the moment the socket is shut and asks at once.
  e.fired = true;
  // Only this socket: the peer may still get a FIN, but the blocked read returns at once.
  if (e.fd >= 0) ::shutdown(e.fd, SHUT_RDWR);
}

}  // namespace

Watchdog& Watchdog::shared() {
  static Watchdog dog;
  return dog;
}

Watchdog::Watchdog() : thread_([this] { run(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

Watchdog::Guard Watchdog::arm(int fd, std::chrono::milliseconds limit) {
  auto entry = std::make_shared<Entry>();
  if (fd >= 0) entry->fd = ::dup(fd);
  std::lock_guard<std::mutex> lock(mutex_);
  if (firing_all_) {
    entry->by_fire_all = true;
    shut(*entry);
    return Guard(*this, entry);
  }
  auto deadline = std::chrono::steady_clock::now() + limit;
  armed_.emplace(deadline, entry);
  // The thread needs waking only if it would sleep past this deadline; otherwise it looks at
  // the map when it wakes anyway (a commit arms every call: a wake-up, two context switches,
  // each time would cost more than the commit's own bookkeeping).
  if (deadline < sleeping_until_) wake_.notify_one();
  return Guard(*this, entry);
}

void Watchdog::disarm(const std::shared_ptr<Entry>& entry) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = armed_.begin(); it != armed_.end(); ++it) {
      if (it->second == entry) {
        armed_.erase(it);
        break;
      }
    }
  }
  // Closed outside the lock but only after the entry left the map: the watchdog thread
  // shuts sockets down under the lock, so it can no longer touch this descriptor.
  if (entry->fd >= 0) ::close(entry->fd);
}

void Watchdog::fire_all() {
  std::lock_guard<std::mutex> lock(mutex_);
  firing_all_ = true;
  for (auto& [deadline, entry] : armed_) {
    entry->by_fire_all = true;
    shut(*entry);
  }
  armed_.clear();
}

void Watchdog::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    const auto now = std::chrono::steady_clock::now();
    // Idle, it still wakes every kIdleTick, so a call armed meanwhile with a longer limit
    // needs no wake-up (arm()); a shorter one still gets one.
    const auto deadline = armed_.empty() ? now + kIdleTick : armed_.begin()->first;
    if (now < deadline) {
      // A copy (`deadline`): wait_until reads it again after waking, and meanwhile (the lock
      // is released) a disarm may have erased the node that held it.
      sleeping_until_ = deadline;
      wake_.wait_until(lock, deadline);
      sleeping_until_ = std::chrono::steady_clock::time_point::min();
      continue;
    }
    auto first = armed_.begin();
    shut(*first->second);
    ++timeouts_;
    armed_.erase(first);  // the caller's disarm still closes the descriptor
  }
}

Watchdog::Guard::~Guard() {
  if (entry_) dog_->disarm(entry_);
}

bool Watchdog::Guard::fired() const { return entry_ && entry_->fired.load(); }

bool Watchdog::Guard::fired_by_fire_all() const { return entry_ && entry_->by_fire_all.load(); }

}  // namespace store
