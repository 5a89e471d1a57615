#pragma once
// A leadership::Clock the test moves by hand: lease expiry without sleeping.
#include <atomic>
#include <chrono>

#include "leadership/clock.hpp"

namespace test {

class ManualClock final : public leadership::Clock {
 public:
  time_point now() const override { return time_point(std::chrono::nanoseconds(ns_.load())); }
  void advance(std::chrono::nanoseconds d) { ns_ += d.count(); }

 private:
  std::atomic<std::int64_t> ns_{1'000'000'000};
};

}  // namespace test
