#pragma once
// Closed orders (filled or canceled) never change again, so memory need not keep them all. This
// queues each closed order with the journal seq at which the SQL tables hold it, and drops the
// oldest from the engine once the projection has reached them and more than `keep` are
// queued; queries for dropped orders are answered from the tables. Memory stays flat however
// long the server runs. Not thread-safe: used under the engine's exclusive lock.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <vector>

#include "market/engine.hpp"

namespace app {

// Closed orders kept in memory by default (--closed-orders-cached), active server and standby.
inline constexpr std::size_t kDefaultClosedOrdersCached = 100000;

class ClosedOrders {
 public:
  explicit ClosedOrders(std::size_t keep) : keep_(keep) {}

  // The orders a request's effects `fx` closed (market::Engine::closed_orders), readable from
  // the tables once its journal entry `seq` is projected. The live path (app/durable_engine.cpp)
  // and the replay (app/replay.cpp) both note through this.
  void note(const market::Effects& fx, std::int64_t seq);
  // Drops the oldest queued orders from `engine` while more than `keep` are queued and the
  // projection holds them (`projected_through`), at most `at_most` of them.
  void forget_projected(market::Engine& engine, std::int64_t projected_through,
                        std::size_t at_most = std::numeric_limits<std::size_t>::max());
  // The engine was emptied: nothing queued refers to it any more.
  void clear() { queue_.clear(); }
  std::size_t size() const { return queue_.size(); }

 private:
  struct Closed {
    market::OrderId id;
    std::int64_t seq;
  };
  std::size_t keep_;
  std::deque<Closed> queue_;
};

}  // namespace app
