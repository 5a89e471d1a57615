#pragma once
// exchange::Decimal in Catch tests: shown by its text when a check fails, and written as text.
#include <string>

#include <catch2/catch.hpp>

#include "exchange/decimal.hpp"

namespace Catch {
template <>
struct StringMaker<exchange::Decimal> {
  static std::string convert(const exchange::Decimal& d) { return d.to_string(); }
};
}  // namespace Catch

namespace testing_support {

// Parses text that must be accepted (the test stops if it is not).
inline exchange::Decimal dec(const std::string& text) {
  exchange::Decimal d;
  std::string why = exchange::Decimal::parse(text, d);
  INFO("parsing '" << text << "': " << why);
  REQUIRE(why.empty());
  return d;
}

}  // namespace testing_support
