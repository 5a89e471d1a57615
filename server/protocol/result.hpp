#pragma once
// What a request produced, one item per reply element, before it becomes XML. Refusals are
// market::Rejects up to render(), which words them (protocol/reject_text.hpp).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "market/reject.hpp"
#include "market/types.hpp"
#include "protocol/command.hpp"

namespace protocol {

struct ResultItem {
  enum class Kind { Created, Opened, Status, Canceled, Replaced, Error };
  Kind kind = Kind::Error;
  Attributes attrs;
  std::optional<market::Reject> reject;  // Error: why the child was refused
  market::OrderStatus status;            // Status, Canceled
};

struct Result {
  // Set: the whole request was refused (<results><error>WHY</error></results>).
  std::optional<market::Reject> error;
  std::vector<ResultItem> items;

  static Result failure(market::Reject why) {
    Result r;
    r.error = std::move(why);
    return r;
  }
};

}  // namespace protocol
