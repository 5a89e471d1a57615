// Keeping the writer lock while the server runs: the keeper thread watches the lock's session
// and, when it ends under us, takes the lock again, or finds that another server took over.
#include <algorithm>

#include "leadership/session_names.hpp"
#include "leadership/writer_lock.hpp"
#include "util/log.hpp"

namespace leadership {

void WriterLock::keep(std::function<void(const std::string&)> on_fenced) {
  state_.on_fenced(std::move(on_fenced));
  keeper_ = std::thread([this] { run_keeper(); });
}

void WriterLock::stop_keeping() {
  stopping_.request();
  if (keeper_.joinable()) keeper_.join();
}

void WriterLock::run_keeper() {
  const auto renew_every = state_.renew_every();
  auto next_renewal = Steady::now() + renew_every;
  while (!stopping_.requested()) {
    // Nothing else is sent on the session: an idle one only ever reads something when it ends
    // (terminated, PostgreSQL stopping, the network resetting it).
    const auto until_renewal =
        std::chrono::duration_cast<std::chrono::milliseconds>(next_renewal - Steady::now());
    const auto wait =
        std::clamp(until_renewal, std::chrono::milliseconds(0), std::chrono::milliseconds(500));
    const bool ended = conn_->broke_within(wait);
    if (!ended) {
      if (Steady::now() < next_renewal) continue;
      next_renewal = Steady::now() + renew_every;
      try {
        if (auto fenced = renew_lease()) {
          state_.lost_to_another(*fenced);
          return;
        }
        continue;
      } catch (const std::exception& e) {
        if (stopping_.requested()) return;
        // The session broke (it is closed now): taken again below. A lease that cannot be
        // renewed runs out, and lease_valid() turns false until a renewal succeeds.
        EXCHANGE_LOG(warn) << "renewing the writer lease failed: " << e.what();
        if (conn_->usable()) continue;
      }
    }
    EXCHANGE_LOG(warn) << "the writer lock's session (backend pid " << backend_.pid
                       << ") ended; taking the lock again";
    state_.session_lost(ended ? Leadership::Loss::Ended : Leadership::Loss::Unknown);
    std::string last_error;
    for (int attempt = 1; !stopping_.requested(); ++attempt) {
      try {
        if (auto fenced = take_again()) {
          state_.lost_to_another(*fenced);
          return;
        }
        state_.lock_retaken();
        if (auto fenced = renew_lease()) {
          state_.lost_to_another(*fenced);
          return;
        }
        next_renewal = Steady::now() + renew_every;
        EXCHANGE_LOG(warn) << "took the writer lock again (backend pid " << backend_.pid
                           << ", writer epoch still " << epoch() << ") after " << attempt
                           << (attempt == 1 ? " attempt" : " attempts");
        break;
      } catch (const std::exception& e) {
        if (stopping_.requested()) return;
        // Retaken, but the renewal failed: the session is as good as lost again.
        if (state_.state() == State::Leading) state_.session_lost();
        // PostgreSQL unreachable (restarting, failing over): the writes fail meanwhile too,
        // and an append that does get through is still fenced by the epoch.
        if (last_error != e.what())
          EXCHANGE_LOG(warn) << "taking the writer lock again failed (attempt " << attempt
                             << "): " << e.what() << "; retrying every second";
        last_error = e.what();
        stopping_.sleep_for(std::chrono::seconds(1));
      }
    }
  }
}

std::optional<std::string> WriterLock::take_again() {
  auto conn = std::make_unique<LockConnection>(options_.conninfo, kLockSession);
  const Backend old = backend_;
  for (;;) {
    if (stopping_.requested()) throw std::runtime_error("shutting down");
    auto h = holder(*conn);
    if (!h) {
      if (conn->exec("SELECT pg_try_advisory_lock($1)", {std::to_string(kKey)}, deadline(),
                     &stopping_)
              .at(0)
              .at(0) != "t")
        continue;  // someone took it just now: see who
      // Ours again; but if another server held it meanwhile, it bumped the epoch.
      std::int64_t now = 0;
      const std::string stored = stored_epoch(*conn, &now);
      if (now != epoch())
        return "another server took over the database (" + stored + "; ours was epoch " +
               std::to_string(epoch()) + ")";
      backend_ = backend_of(*conn);
      conn_ = std::move(conn);
      return std::nullopt;
    }
    if (h->pid == old.pid && h->backend_start == old.started) {
      // Our own old session, still alive on PostgreSQL's side although it broke on ours (a
      // network fault): end it, so that the lock is free. Waits up to the timeout for it.
      conn->exec("SELECT pg_terminate_backend($1, $2)",
                 {std::to_string(h->pid), std::to_string(options_.timeout.count())},
                 deadline() + options_.timeout, &stopping_);
      continue;
    }
    std::int64_t now = 0;
    const std::string stored = stored_epoch(*conn, &now);
    // A server that has just taken the lock bumps the epoch a moment later.
    return "another server took over the database: its writer lock is held by " + h->describe() +
           (now == epoch() ? "; writer_epoch is still ours, " + std::to_string(epoch()) +
                                 ", until the new holder bumps it"
                           : "; writer_epoch: " + stored);
  }
}

}  // namespace leadership
