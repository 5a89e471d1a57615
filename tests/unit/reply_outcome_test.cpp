// The reply's one way (issue 23): the group commit's outcome mapped once to the app's Outcome,
// each Outcome to its error text and its Prometheus label, the table of error texts, and the
// pending result DurableEngine::submit returns.
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "app/outcome.hpp"
#include "app/pending.hpp"
#include "observability/metrics.hpp"
#include "serving/reply_errors.hpp"

namespace {

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

}  // namespace

TEST_CASE("store outcomes map once to the app's Outcome and to one error each", "[unit]") {
  CHECK(app::outcome_of(store::CommitResult::Committed) == app::Outcome::Durable);
  CHECK(app::outcome_of(store::CommitResult::NotApplied) == app::Outcome::NotApplied);
  CHECK(app::outcome_of(store::CommitResult::Unknown) == app::Outcome::Unknown);
  CHECK(app::outcome_of(store::CommitResult::Fenced) == app::Outcome::Fenced);

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
  for (E e : {E::Unavailable, E::Fenced, E::Standby, E::Stopping})
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

TEST_CASE("a Pending runs its one continuation whichever comes first", "[unit]") {
  SECTION("ended before the continuation is attached: it runs on the attaching thread") {
    app::Pending pending;
    pending.end(app::Outcome::Fenced);
    int runs = 0;
    pending.then([&](app::Outcome outcome, std::string prepared) {
      ++runs;
      CHECK(outcome == app::Outcome::Fenced);
      CHECK(prepared.empty());
    });
    CHECK(runs == 1);
  }
  SECTION("attached first: it runs when the request ends, on the ending thread") {
    app::Pending pending;
    std::thread::id ran_on;
    std::string got;
    pending.then([&](app::Outcome outcome, std::string prepared) {
      CHECK(outcome == app::Outcome::Durable);
      got = std::move(prepared);
      ran_on = std::this_thread::get_id();
    });
    CHECK(got.empty());
    const app::Pending copy = pending;  // what the commit thread's callback holds
    std::thread ender([copy] { copy.end(app::Outcome::Durable, "<results/>"); });
    const auto ender_id = ender.get_id();
    ender.join();
    CHECK(got == "<results/>");
    CHECK(ran_on == ender_id);
  }
  SECTION("wait() returns what another thread ended it with") {
    app::Pending pending;
    std::thread ender([pending] { pending.end(app::Outcome::NotApplied); });
    const auto ended = pending.wait();
    ender.join();
    CHECK(ended.outcome == app::Outcome::NotApplied);
    CHECK(ended.prepared.empty());
  }
}
