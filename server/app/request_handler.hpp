#pragma once
// One request's way through the server, whatever the threads and sockets: parse, submit to the
// durable engine, render. The durable engine decides when the reply may leave (once what it
// reflects is durable) and ends the app::Pending that submit returned; the continuation this
// attaches to it is the one place a reply is made from its outcome (the prepared document, or the
// outcome's error from serving/reply_errors.hpp) and counted.
//
// Before that, authorization (gates/authorize.hpp, with --principals): a caller that may not have
// the request gets every child refused, and nothing is journaled. Then two guards that cost nothing
// to a light request: heavy requests (by size) go one at a time through HeavyRequests, and while
// the process is over its memory budget a request that could grow the state is refused whole
// (MemoryBudget).
#include <memory>
#include <string>
#include <string_view>

#include "app/durable_engine.hpp"
#include "auth/gate.hpp"
#include "gates/heavy_requests.hpp"
#include "gates/memory_budget.hpp"
#include "observability/metrics.hpp"
#include "protocol/parse.hpp"
#include "serving/handler.hpp"

namespace app {

struct HandlerLimits {
  protocol::ParseLimits parse;  // --max-children, --max-id-length, ...
  HeavyLimits heavy;
  std::size_t max_memory_bytes = std::size_t{1536} * 1024 * 1024;  // --max-memory-bytes
};

class RequestHandler final : public serving::Handler {
 public:
  // `metrics` counts every answered request by root and outcome, with its latency. `gate`: the
  // principals in force (null: no authentication, every caller may do everything).
  RequestHandler(DurableEngine& engine, Metrics& metrics, HandlerLimits limits = {},
                 std::shared_ptr<auth::Gate> gate = nullptr);

  void handle(std::string_view payload, const auth::Caller& caller, Reply done) override;

  // The guards' gauges, for /metrics.
  void fill(Metrics::StateGauges& gauges);

 private:
  // Parses and submits; `done` as for handle().
  void run(std::string_view payload, const auth::Caller& caller, Reply done);
  // With a gate: whether `caller` may have `cmd`; if not, answers `done` (and counts it).
  bool permitted(const protocol::Command& cmd, const auth::Caller& caller, Metrics::Root root,
                 Reply& done);

  DurableEngine& engine_;
  Metrics& metrics_;
  const protocol::ParseLimits parse_limits_;
  const std::shared_ptr<auth::Gate> gate_;
  MemoryBudget memory_;
  HeavyRequests heavy_;  // last: its thread calls run()
};

}  // namespace app
