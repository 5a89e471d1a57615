#pragma once
// market::Reject in Catch tests: shown by its protocol text when a check fails, and compared by
// reason.
#include <optional>
#include <string>

#include <catch2/catch.hpp>

#include "market/reject.hpp"
#include "protocol/reject_text.hpp"

namespace Catch {
template <>
struct StringMaker<market::Reject> {
  static std::string convert(const market::Reject& r) { return protocol::reject_text(r); }
};
template <>
struct StringMaker<market::Reason> {
  static std::string convert(market::Reason r) {
    return "Reason " + std::to_string(static_cast<int>(r)) + " (" +
           protocol::reject_text(market::Reject(r)) + ")";
  }
};
template <>
struct StringMaker<std::optional<market::Reject>> {
  static std::string convert(const std::optional<market::Reject>& r) {
    return r ? StringMaker<market::Reject>::convert(*r) : "no reject";
  }
};
template <>
struct StringMaker<std::optional<market::Reason>> {
  static std::string convert(const std::optional<market::Reason>& r) {
    return r ? StringMaker<market::Reason>::convert(*r) : "no reason";
  }
};
}  // namespace Catch

namespace testing_support {

// The reason of a refusal, or nothing when there was none.
inline std::optional<market::Reason> reason_of(const std::optional<market::Reject>& reject) {
  if (!reject) return std::nullopt;
  return reject->reason;
}

}  // namespace testing_support
