// The reply's one way (issue 23): the group commit's outcome mapped once to the app's Outcome,
// each Outcome to its error text and its Prometheus label, and the table of error texts.
#include <string>

#include <catch2/catch.hpp>

#include "app/metrics.hpp"
#include "app/outcome.hpp"
#include "serving/reply_errors.hpp"

namespace {

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

}  // namespace

TEST_CASE("store outcomes map once to the app's Outcome and to one error each", "[unit]") {
  CHECK(app::outcome_of(store::Outcome::Committed) == app::Outcome::Durable);
  CHECK(app::outcome_of(store::Outcome::NotApplied) == app::Outcome::NotApplied);
  CHECK(app::outcome_of(store::Outcome::Unknown) == app::Outcome::Unknown);
  CHECK(app::outcome_of(store::Outcome::Fenced) == app::Outcome::Fenced);

  CHECK_FALSE(app::error_of(app::Outcome::Durable));
  CHECK_FALSE(app::error_of(app::Outcome::Rejected));  // the refusing code names the reason
  CHECK_FALSE(app::error_of(app::Outcome::Busy));
  CHECK(app::error_of(app::Outcome::Unavailable) == serving::ReplyError::Unavailable);
  CHECK(app::error_of(app::Outcome::Fenced) == serving::ReplyError::Fenced);
  CHECK(app::error_of(app::Outcome::InternalError) == serving::ReplyError::InternalError);
  CHECK(app::error_of(app::Outcome::NotApplied) == serving::ReplyError::NotApplied);
  CHECK(app::error_of(app::Outcome::Unknown) == serving::ReplyError::Unknown);
}

TEST_CASE("Prometheus labels are derived from the one Outcome", "[unit]") {
  using O = app::Outcome;
  CHECK(std::string(app::Metrics::label_of(O::Durable)) == "ok");
  CHECK(std::string(app::Metrics::label_of(O::Rejected)) == "rejected");
  for (O o : {O::Busy, O::Unavailable, O::Fenced})
    CHECK(std::string(app::Metrics::label_of(o)) == "unavailable");
  for (O o : {O::InternalError, O::NotApplied, O::Unknown})
    CHECK(std::string(app::Metrics::label_of(o)) == "failed");
}

TEST_CASE("every error text starts with the class clients match on", "[unit]") {
  using E = serving::ReplyError;
  // Clients (and tests/support/random_traders.cpp) tell "nothing happened, retry" from an
  // item-level answer by these prefixes.
  for (E e : {E::Unavailable, E::Fenced, E::Stopping})
    CHECK(starts_with(serving::error_text(e), "Service unavailable: "));
  for (E e : {E::NotApplied, E::Unknown, E::InternalError, E::HandlerFailed})
    CHECK(starts_with(serving::error_text(e), "Internal error: "));
  for (E e : {E::HeavyQueueFull, E::OverMemory, E::NoThreadForRequest, E::NoThreadForConnection})
    CHECK(starts_with(serving::error_text(e), "Server busy: "));
  // Whether it is safe to retry is said where it is known.
  CHECK(std::string(serving::error_text(E::NotApplied)).find("safe to retry") != std::string::npos);
  CHECK(std::string(serving::error_text(E::Unknown)).find("query your orders") !=
        std::string::npos);
}
