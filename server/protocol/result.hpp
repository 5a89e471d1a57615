#pragma once
// What a request produced, one item per reply element, before it becomes XML.
#include <string>
#include <vector>

#include "market/types.hpp"
#include "protocol/command.hpp"

namespace protocol {

struct ResultItem {
  enum class Kind { Created, Opened, Status, Canceled, Error };
  Kind kind = Kind::Error;
  Attributes attrs;
  std::string message;         // Error
  market::OrderStatus status;  // Status, Canceled
};

struct Result {
  std::string error;  // non-empty: the whole request failed (<results><error>WHY</error>)
  std::vector<ResultItem> items;

  static Result failure(std::string why) {
    Result r;
    r.error = std::move(why);
    return r;
  }
};

}  // namespace protocol
