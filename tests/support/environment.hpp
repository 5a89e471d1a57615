#pragma once
// What the tests read from the environment (./test.sh sets it: EXCHANGE_TEST_DATABASE_URL,
// EXCHANGE_SERVER_BIN, the local cluster's EXCHANGE_TEST_PG_* and so on).
#include <cstdlib>
#include <iostream>
#include <string>

namespace testing_support {

// The variable's value, or "" when it is not set.
inline std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// The value of a variable the test cannot run without: when it is unset or empty, the test
// says SKIPPED and exits 77, which CTest reports as skipped.
inline std::string env_or_skip(const char* name) {
  std::string value = env_or_empty(name);
  if (value.empty()) {
    std::cerr << "SKIPPED: " << name << " is not set (./test.sh sets it)\n";
    std::exit(77);
  }
  return value;
}

}  // namespace testing_support
