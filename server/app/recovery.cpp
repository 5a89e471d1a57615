#include "app/recovery.hpp"

#include <chrono>
#include <mutex>
#include <thread>

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

  for (int attempt = 1;; ++attempt) {
    try {
      store::Database db(conninfo_);
      std::unique_lock<boost::shared_mutex> lock(handler_.engine_lock());
      engine_.clear();
      // The projection, then the journal after it; the projector's queue is re-derived.
      batcher.set_next_seq(load_state(db, engine_, projector_).last_seq + 1);
      handler_.set_available(true);
      EXCHANGE_LOG(warn) << "state reloaded from the database; serving again";
      return;
    } catch (const std::exception& e) {
      EXCHANGE_LOG(error) << "reloading state failed (attempt " << attempt << "): " << e.what();
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(attempt, 10) * 100));
    }
  }
}

}  // namespace app
