// What happens when a group commit fails (PostgreSQL restarted or went silent, disk full, a bug
// caught by a CHECK): the requests that could have seen the lost batch get errors at once, the
// exchange answers "unavailable" instead of serving state the database does not have, and the
// engine is rebuilt from PostgreSQL as soon as it answers again. Memory and database never
// disagree. A shutdown request ends the rebuilding loop: the server then stays unavailable
// until it exits. A fenced write is not recovered from at all: the database belongs to another
// server now, so the requests get errors and the process steps down.
#include <algorithm>
#include <chrono>
#include <mutex>

#include "app/durable_engine.hpp"
#include "app/replay.hpp"
#include "util/log.hpp"

namespace app {

void DurableEngine::recover(store::Ticket failed, store::CommitResult outcome) {
  // First, so that requests arriving meanwhile get the same answer as the failed ones.
  if (outcome == store::CommitResult::Fenced) fence(batcher_.fenced_why());
  std::vector<std::function<void()>> failed_requests;
  {
    std::unique_lock<boost::shared_mutex> lock(engine_lock_);
    failed_requests = batcher_.fail_open_batch(failed, outcome);
    available_ = false;
  }
  // Their errors go out now, not after the database is back.
  for (auto& reply : failed_requests) reply();
  if (outcome == store::CommitResult::Fenced) return;
  EXCHANGE_LOG(warn) << "batch " << failed << " failed; " << failed_requests.size()
                     << " waiting requests answered with an error; serving 'unavailable' "
                        "until the state is reloaded from the database";

  // Each attempt is bounded (connect_timeout, the watchdog), so the loop sees a shutdown
  // within one attempt. Failures are logged when their reason changes, not every time.
  const auto started = std::chrono::steady_clock::now();
  std::string last_error;
  for (int attempt = 1;; ++attempt) {
    if (stop_.requested() || fenced_) {
      EXCHANGE_LOG(warn) << "shutting down: the state is not reloaded"
                         << (last_error.empty() ? "" : " (last failure: " + last_error + ")");
      return;
    }
    try {
      auto reader = store_.state_reader();
      std::unique_lock<boost::shared_mutex> lock(engine_lock_);
      engine_.clear();
      // The projection, then the journal after it; the projector's queue is re-derived.
      batcher_.set_next_seq(load_state(*reader, engine_, closed_, projector_).last_seq + 1);
      available_ = true;
      ++reloads_;
      auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - started);
      EXCHANGE_LOG(warn) << "state reloaded from the database after " << attempt
                         << (attempt == 1 ? " attempt" : " attempts") << " and " << took.count()
                         << " ms; serving again";
      return;
    } catch (const std::exception& e) {
      if (last_error != e.what())
        EXCHANGE_LOG(error) << "reloading state failed (attempt " << attempt << "): " << e.what()
                            << "; retrying until it succeeds or the server stops";
      last_error = e.what();
      stop_.sleep_for(std::chrono::milliseconds(std::min(attempt, 10) * 100));
    }
  }
}

}  // namespace app
