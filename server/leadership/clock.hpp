#pragma once
// The clock leadership counts its lease by: the steady clock in the server, a clock the test
// moves by hand in unit tests (tests/support/manual_clock.hpp).
#include <chrono>

namespace leadership {

class Clock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  virtual ~Clock() = default;
  virtual time_point now() const = 0;
  // The process's steady clock.
  static const Clock& steady();
};

}  // namespace leadership
