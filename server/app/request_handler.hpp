#pragma once
// One request's way through the server, independent of how threads and sockets are arranged:
// parse, apply to the engine under its lock, hand the journal entry (and the effects, for the
// projector) to the group commit, render, and release the reply only once everything it
// reflects is durable in the journal.
#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include <boost/thread/shared_mutex.hpp>

#include "app/metrics.hpp"
#include "exchange/engine.hpp"
#include "store/batcher.hpp"
#include "store/order_archive.hpp"
#include "store/projector.hpp"

namespace app {

class RequestHandler {
 public:
  using Reply = std::function<void(std::string xml)>;

  // `closed_orders_cached`: how many closed orders the engine keeps in memory for queries
  // before older ones are answered from `archive` (once `projector` has written them there).
  RequestHandler(exchange::Engine& engine, store::Batcher& batcher, store::OrderArchive& archive,
                 const store::Projector& projector, std::size_t closed_orders_cached);

  // Calls `done` exactly once with the reply document: inline, or later on the store's writer
  // thread. Never waits for a commit (it may read a closed order from the database).
  void handle(std::string_view payload, Reply done);

  // Counts every answered request by root and outcome, with its latency (may stay null).
  void set_metrics(Metrics* metrics) { metrics_ = metrics; }
  // Any thread, no lock (for /healthz, which must not wait behind a reload).
  bool available() const { return available_.load(); }

  // The engine's lock: exclusive for changes, shared for read-only requests. Recovery after a
  // failed write takes it exclusively.
  boost::shared_mutex& engine_lock() { return engine_lock_; }
  // Under the exclusive engine lock: while unavailable (the engine is being rebuilt after a
  // failed write) every request gets an error at once and nothing is applied.
  void set_available(bool available) { available_ = available; }

 private:
  exchange::Engine& engine_;
  store::Batcher& batcher_;
  store::OrderArchive& archive_;
  const store::Projector& projector_;
  std::size_t closed_orders_cached_;
  boost::shared_mutex engine_lock_;
  // Changed under the exclusive engine lock; atomic so health checks can read it without.
  std::atomic<bool> available_{true};
  Metrics* metrics_ = nullptr;
};

}  // namespace app
