#include "app/closed_orders.hpp"

namespace app {

void ClosedOrders::note(const market::Effects& fx, std::int64_t seq) {
  for (market::OrderId id : market::Engine::closed_orders(fx)) queue_.push_back({id, seq});
}

void ClosedOrders::forget_projected(market::Engine& engine, std::int64_t projected_through,
                                    std::size_t at_most) {
  for (std::size_t n = 0;
       n < at_most && queue_.size() > keep_ && queue_.front().seq <= projected_through; ++n) {
    engine.forget(queue_.front().id);
    queue_.pop_front();
  }
}

}  // namespace app
