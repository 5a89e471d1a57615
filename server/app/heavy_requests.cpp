#include "app/heavy_requests.hpp"

#include <chrono>
#include <utility>

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
  for (auto& w : left) w.refuse();
}

bool HeavyRequests::submit(std::size_t bytes, Run run, std::function<void()> refuse) {
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
    s.queue.push_back({bytes, std::move(run), std::move(refuse)});
  }
  s.wake.notify_all();
  return true;
}

HeavyRequests::Counts HeavyRequests::counts() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return {state_->queue.size(), state_->queued_bytes, state_->in_flight_bytes, state_->refused,
          state_->paused};
}

void HeavyRequests::loop() {
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mutex);
  for (;;) {
    s.wake.wait(lock, [&] {
      if (s.stopping) return true;
      if (s.queue.empty()) return false;
      // One heavy request may always run, however big.
      return s.in_flight_bytes == 0 ||
             s.in_flight_bytes + s.queue.front().bytes <= limits_.in_flight_bytes;
    });
    if (s.stopping) return;
    if (pause_) {
      lock.unlock();
      const bool wait = pause_();
      lock.lock();
      s.paused = wait;
      if (wait) {
        // Polled: what clears it (the projector's progress) does not know about this queue.
        s.wake.wait_for(lock, std::chrono::milliseconds(20), [&] { return s.stopping; });
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
