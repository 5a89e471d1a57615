#pragma once
// market::Decimal in Catch tests: shown by its text when a check fails, and written as text.
#include <string>

#include <catch2/catch.hpp>

#include "market/decimal.hpp"

namespace Catch {
template <>
struct StringMaker<market::Decimal> {
  static std::string convert(const market::Decimal& d) { return d.to_string(); }
};
}  // namespace Catch

namespace testing_support {

// Parses text that must be accepted (the test stops if it is not).
inline market::Decimal dec(const std::string& text) {
  market::Decimal d;
  const bool refused = market::Decimal::parse(text, d).has_value();
  INFO("parsing '" << text << "'");
  REQUIRE_FALSE(refused);
  return d;
}

}  // namespace testing_support
