#pragma once
// Small checks the end-to-end tests share: text containing text, waiting for a condition up to a
// deadline, and the conservation rules on the stored state as a Catch check.
#include <chrono>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "support/test_database.hpp"

namespace testing_support {

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Waits until `ready` holds, asking every `poll`, up to `at_most`; then asks it once more.
template <typename Ready>
bool wait_until(Ready ready, std::chrono::milliseconds at_most,
                std::chrono::milliseconds poll = std::chrono::milliseconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + at_most;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(poll);
  }
  return ready();
}

// CHECKs that conservation_violations() finds none, with each one it finds as a message.
inline void check_conservation() {
  auto violations = conservation_violations();
  for (const auto& v : violations) UNSCOPED_INFO(v);
  CHECK(violations.empty());
}

}  // namespace testing_support
