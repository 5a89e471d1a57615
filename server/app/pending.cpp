#include "app/pending.hpp"

#include <condition_variable>
#include <mutex>
#include <optional>

namespace app {

struct Pending::State {
  std::mutex mutex;
  std::condition_variable ended_cv;
  std::optional<Ended> ended;  // set by end() while no continuation waits for it
  Continuation continuation;
};

Pending::Pending() : state_(std::make_shared<State>()) {}

void Pending::then(Continuation continuation) {
  std::unique_lock<std::mutex> lock(state_->mutex);
  if (!state_->ended) {
    state_->continuation = std::move(continuation);
    return;
  }
  Ended ended = std::move(*state_->ended);
  state_->ended.reset();
  lock.unlock();
  continuation(ended.outcome, std::move(ended.prepared));
}

Pending::Ended Pending::wait() {
  std::unique_lock<std::mutex> lock(state_->mutex);
  state_->ended_cv.wait(lock, [this] { return state_->ended.has_value(); });
  Ended ended = std::move(*state_->ended);
  state_->ended.reset();
  return ended;
}

void Pending::end(Outcome outcome, std::string prepared) const {
  std::unique_lock<std::mutex> lock(state_->mutex);
  if (!state_->continuation) {
    state_->ended = Ended{outcome, std::move(prepared)};
    lock.unlock();
    state_->ended_cv.notify_all();
    return;
  }
  Continuation continuation = std::move(state_->continuation);
  state_->continuation = nullptr;
  lock.unlock();
  continuation(outcome, std::move(prepared));
}

}  // namespace app
