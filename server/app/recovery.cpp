#include "app/recovery.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>

#include "app/log.hpp"
#include "app/replay.hpp"
#include "store/database.hpp"

namespace app {

void Recovery::operator()(store::Batcher& batcher, store::Ticket failed, store::Outcome outcome) {
  std::vector<std::function<void()>> failed_requests;
  {
    std::unique_lock<boost::shared_mutex> lock(handler_.engine_lock());
    failed_requests = batcher.fail_open_batch(failed, outcome);
    handler_.set_available(false);
  }
  // Their errors go out now, not after the database is back.
  for (auto& reply : failed_requests) reply();
  EXCHANGE_LOG(warn) << "batch " << failed << " failed; " << failed_requests.size()
                     << " waiting requests answered with an error; serving 'unavailable' "
                        "until the state is reloaded from the database";

  // Each attempt is bounded (connect_timeout, the watchdog), so the loop sees a shutdown
  // within one attempt. Failures are logged when their reason changes, not every time.
  const auto started = std::chrono::steady_clock::now();
  std::string last_error;
  for (int attempt = 1;; ++attempt) {
    if (stop_.requested()) {
      EXCHANGE_LOG(warn) << "shutting down: the state is not reloaded"
                         << (last_error.empty() ? "" : " (last failure: " + last_error + ")");
      return;
    }
    try {
      store::Database db(conninfo_, timeout_);
      std::unique_lock<boost::shared_mutex> lock(handler_.engine_lock());
      engine_.clear();
      // The projection, then the journal after it; the projector's queue is re-derived.
      batcher.set_next_seq(load_state(db, engine_, projector_).last_seq + 1);
      handler_.set_available(true);
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
