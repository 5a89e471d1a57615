#include "net/buffer_budget.hpp"

namespace net {

bool BufferBudget::try_charge(std::size_t bytes) {
  std::size_t used = used_.load(std::memory_order_relaxed);
  do {
    // Written so that it cannot overflow: `used` may already be past the limit.
    if (used > limit_ || bytes > limit_ - used) return false;
  } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  return true;
}

}  // namespace net
