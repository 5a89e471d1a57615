#pragma once
// Requests' effects on their way from the group commit to the projector, kept as the requests
// produced them. Appending is all the commit does with them (under the engine lock, and on the
// commit thread before the replies go out); the projector's thread merges them into
// ProjectionRows (store/projection_rows.hpp), off the reply path.
#include <cstddef>
#include <utility>
#include <vector>

#include "market/effects.hpp"

namespace store {

// The rows one request's effects hold (each account, position, order, execution and symbol).
std::size_t rows_of(const market::Effects& fx);

class DeferredEffects {
 public:
  DeferredEffects() = default;
  // A moved-from one is empty, its rows() zero.
  DeferredEffects(DeferredEffects&& other) noexcept
      : effects_(std::move(other.effects_)), rows_(std::exchange(other.rows_, 0)) {}
  DeferredEffects& operator=(DeferredEffects&& other) noexcept {
    effects_ = std::move(other.effects_);
    rows_ = std::exchange(other.rows_, 0);
    return *this;
  }

  // One request's effects, after those added before (cheap: a move).
  void add(market::Effects&& fx);
  // Room for `requests` requests' effects.
  void reserve(std::size_t requests) { effects_.reserve(requests); }
  // Rows as the requests produced them, before merging: what these hold in memory, and at
  // most what projecting them writes. The projection's lag is counted in these.
  std::size_t rows() const { return rows_; }
  bool empty() const { return effects_.empty(); }
  // Each request's effects, in the order added; leaves this empty.
  std::vector<market::Effects> take();

 private:
  std::vector<market::Effects> effects_;
  std::size_t rows_ = 0;
};

}  // namespace store
