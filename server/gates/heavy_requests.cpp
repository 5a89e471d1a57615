#include "gates/heavy_requests.hpp"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "util/log.hpp"

namespace app {

HeavyRequests::HeavyRequests(HeavyLimits limits, Pause pause)
    : limits_(limits), pause_(std::move(pause)), thread_([this] { loop(); }) {}

HeavyRequests::~HeavyRequests() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopping = true;
  }
  state_->wake.notify_all();
  thread_.join();
  std::deque<Waiting> left;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    left.swap(state_->queue);
    state_->queued_bytes = 0;
  }
  for (auto& w : left) w.refuse(Refusal::Stopping);
}

bool HeavyRequests::submit(std::size_t bytes, Run run, Refuse refuse) {
  State& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    // An empty queue always takes one, so no request is refused for its size alone
    // (--max-request-bytes bounds that).
    if (s.stopping || (!s.queue.empty() && s.queued_bytes + bytes > limits_.queued_bytes)) {
      ++s.refused;
      return false;
    }
    s.queued_bytes += bytes;
    s.queue.push_back({bytes, std::move(run), std::move(refuse), Clock::now() + limits_.max_wait});
  }
  s.wake.notify_all();
  return true;
}

HeavyRequests::Counts HeavyRequests::counts() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return {state_->queue.size(), state_->queued_bytes, state_->in_flight_bytes, state_->refused,
          state_->paused};
}

void HeavyRequests::refuse_overdue(std::unique_lock<std::mutex>& lock) {
  State& s = *state_;
  std::vector<Waiting> overdue;
  const auto now = Clock::now();
  while (!s.queue.empty() && s.queue.front().deadline <= now) {
    s.queued_bytes -= s.queue.front().bytes;
    ++s.refused;
    overdue.push_back(std::move(s.queue.front()));
    s.queue.pop_front();
  }
  if (overdue.empty()) return;
  lock.unlock();
  EXCHANGE_LOG(warn) << overdue.size() << " large request(s) waited " << limits_.max_wait.count()
                     << " ms without starting (--max-heavy-wait-ms): refused";
  for (auto& w : overdue) w.refuse(Refusal::WaitedTooLong);
  lock.lock();
}

void HeavyRequests::loop() {
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mutex);
  for (;;) {
    if (s.stopping) return;
    refuse_overdue(lock);
    if (s.stopping) return;
    if (s.queue.empty()) {
      s.paused = false;
      s.wake.wait(lock);
      continue;
    }
    const Waiting& front = s.queue.front();
    // One heavy request may always run, however big.
    const bool room =
        s.in_flight_bytes == 0 || s.in_flight_bytes + front.bytes <= limits_.in_flight_bytes;
    if (!room) {
      const auto deadline = front.deadline;  // a copy: the wait unlocks
      s.wake.wait_until(lock, deadline);
      continue;
    }
    if (pause_) {
      const auto deadline = front.deadline;
      lock.unlock();
      const bool wait = pause_();
      lock.lock();
      s.paused = wait;
      if (wait) {
        // Polled: what clears it (the projector's progress) does not know about this queue.
        s.wake.wait_until(lock, std::min(deadline, Clock::now() + std::chrono::milliseconds(20)));
        continue;
      }
    }
    Waiting w = std::move(s.queue.front());
    s.queue.pop_front();
    s.queued_bytes -= w.bytes;
    s.in_flight_bytes += w.bytes;
    lock.unlock();
    Finished finished = [state = state_, bytes = w.bytes] {
      {
        std::lock_guard<std::mutex> l(state->mutex);
        state->in_flight_bytes -= bytes;
      }
      state->wake.notify_all();
    };
    try {
      w.run(std::move(finished));
    } catch (const std::exception& e) {
      // run() answers its own errors; whatever escapes is a bug, and must not end this thread.
      EXCHANGE_LOG(error) << "a heavy request escaped its handler: " << e.what();
    }
    lock.lock();
  }
}

}  // namespace app
