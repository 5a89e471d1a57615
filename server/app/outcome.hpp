#pragma once
// A request's Outcome (observability/outcome.hpp, the app's one outcome type): what it means
// for the reply (error_of), and where a committed request's comes from. The exchange hands the
// Outcome to the request handler, the handler renders the reply from it, and Metrics derives its
// Prometheus label from it (Metrics::label_of). store::CommitResult, the group commit's word for
// what became of a batch, is a layer below: outcome_of() maps it here, once.
#include <optional>

#include "observability/outcome.hpp"
#include "serving/reply_errors.hpp"
#include "store/batcher.hpp"

namespace app {

// What the group commit's outcome for a request's batch means for the request.
constexpr Outcome outcome_of(store::CommitResult committed) {
  switch (committed) {
    case store::CommitResult::Committed:
      return Outcome::Durable;
    case store::CommitResult::NotApplied:
      return Outcome::NotApplied;
    case store::CommitResult::Unknown:
      return Outcome::Unknown;
    case store::CommitResult::Fenced:
      return Outcome::Fenced;
  }
  return Outcome::Unknown;
}

// The error a request that ended so is answered with; none for Durable (its result is the
// reply), nor for Rejected and Busy (each has several reasons: the code that refuses names
// it).
constexpr std::optional<serving::ReplyError> error_of(Outcome outcome) {
  switch (outcome) {
    case Outcome::Unavailable:
      return serving::ReplyError::Unavailable;
    case Outcome::Fenced:
      return serving::ReplyError::Fenced;
    case Outcome::InternalError:
      return serving::ReplyError::InternalError;
    case Outcome::NotApplied:
      return serving::ReplyError::NotApplied;
    case Outcome::Unknown:
      return serving::ReplyError::Unknown;
    case Outcome::Durable:
    case Outcome::Rejected:
    case Outcome::Busy:
      break;
  }
  return std::nullopt;
}

}  // namespace app
