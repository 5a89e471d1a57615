#include "app/request_handler.hpp"

#include <atomic>
#include <chrono>
#include <memory>
#include <utility>

#include "gates/authorize.hpp"
#include "protocol/parse.hpp"
#include "protocol/render.hpp"
#include "serving/reply_errors.hpp"
#include "util/log.hpp"

namespace app {
namespace {

// The reply to a request that ended without its result.
std::string error_reply(serving::ReplyError error) {
  return protocol::render_error(serving::error_text(error));
}

// Whether applying it could make the exchange hold more (the memory budget refuses these).
bool could_grow(const protocol::Command& cmd) {
  if (cmd.kind == protocol::Command::Kind::Create) return !cmd.creates.empty();
  for (const auto& t : cmd.transactions)
    if (t.kind == protocol::TransactionItem::Kind::Order ||
        t.kind == protocol::TransactionItem::Kind::Replace)
      return true;
  return false;
}

Metrics::Root root_of(const protocol::Command& cmd) {
  switch (cmd.kind) {
    case protocol::Command::Kind::Create:
      return Metrics::Root::Create;
    case protocol::Command::Kind::Transactions:
      return Metrics::Root::Transactions;
    case protocol::Command::Kind::Invalid:
      break;
  }
  return Metrics::Root::Invalid;
}

}  // namespace

RequestHandler::RequestHandler(DurableEngine& engine, Metrics& metrics, HandlerLimits limits,
                               std::shared_ptr<auth::Gate> gate)
    : engine_(engine),
      metrics_(metrics),
      parse_limits_(limits.parse),
      gate_(std::move(gate)),
      memory_(limits.max_memory_bytes),
      heavy_(limits.heavy, [&engine] { return engine.projection_behind(); }) {}

void RequestHandler::handle(std::string_view payload, const auth::Caller& caller, Reply done) {
  if (!heavy_.is_heavy(payload.size())) return run(payload, caller, std::move(done));
  // Heavy: copied (the caller's buffer is not ours past this call) and run in turn. `done` is
  // shared by the run and the refusal; exactly one of them uses it.
  auto shared_done = std::make_shared<Reply>(std::move(done));
  auto refuse = [this, shared_done](serving::ReplyError why) {
    metrics_.request_answered(Metrics::Root::Invalid, Outcome::Busy, std::chrono::nanoseconds(0));
    (*shared_done)(error_reply(why));
  };
  const bool queued = heavy_.submit(
      payload.size(),
      [this, request = std::string(payload), caller,
       shared_done](HeavyRequests::Finished finished) {
        auto answered = std::make_shared<std::atomic<bool>>(false);
        auto answer = [shared_done, finished, answered](std::string xml) {
          if (answered->exchange(true)) return;
          (*shared_done)(std::move(xml));
          finished();
        };
        try {
          run(request, caller, answer);
        } catch (const std::exception& e) {
          // As concurrency/run_request.cpp does for a light request that throws.
          EXCHANGE_LOG(error) << "a request failed: " << e.what();
          answer(error_reply(serving::ReplyError::HandlerFailed));
        }
      },
      [refuse](HeavyRequests::Refusal why) {
        refuse(why == HeavyRequests::Refusal::Stopping ? serving::ReplyError::Stopping
                                                       : serving::ReplyError::HeavyWaitedTooLong);
      });
  if (!queued) refuse(serving::ReplyError::HeavyQueueFull);
}

void RequestHandler::fill(Metrics::StateGauges& gauges) {
  const auto heavy = heavy_.counts();
  gauges.heavy_queued = static_cast<long>(heavy.queued);
  gauges.heavy_in_flight_bytes = static_cast<long>(heavy.in_flight_bytes);
  gauges.heavy_refused = static_cast<long>(heavy.refused);
  gauges.heavy_paused = heavy.paused ? 1 : 0;
  gauges.memory_resident_bytes = static_cast<long>(memory_.resident());
  gauges.memory_refused = static_cast<long>(memory_.refusals());
}

bool RequestHandler::permitted(const protocol::Command& cmd, const auth::Caller& caller,
                               Metrics::Root root, Reply& done) {
  if (!gate_) return true;
  const auto refused = authorize(*gate_->principals(), caller, cmd);
  if (!refused) return true;
  gate_->refused(refused->why, caller.peer, caller.principal,
                 refused->reject.value.empty() ? "" : "account " + refused->reject.value);
  metrics_.request_answered(root, Outcome::Rejected, std::chrono::nanoseconds(0));
  done(protocol::render(refuse_every_child(cmd, refused->reject)));
  return false;
}

void RequestHandler::run(std::string_view payload, const auth::Caller& caller, Reply done) {
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  const protocol::Command cmd = protocol::parse(payload, parse_limits_);
  const Metrics::Root root = root_of(cmd);
  if (cmd.kind == protocol::Command::Kind::Invalid) {
    metrics_.request_answered(root, Outcome::Rejected, Clock::now() - started);
    return done(protocol::render(protocol::Result::failure(*cmd.error)));
  }
  if (!permitted(cmd, caller, root, done)) return;
  if (could_grow(cmd) && memory_.over()) {
    memory_.refused();
    metrics_.request_answered(root, Outcome::Rejected, Clock::now() - started);
    return done(error_reply(serving::ReplyError::OverMemory));
  }
  engine_
      .submit(cmd, payload, [](const protocol::Result& result) { return protocol::render(result); })
      .then([&metrics = metrics_, root, started, done = std::move(done)](Outcome outcome,
                                                                         std::string xml) {
        if (const auto error = error_of(outcome)) xml = error_reply(*error);
        metrics.request_answered(root, outcome, Clock::now() - started);
        done(std::move(xml));
      });
}

}  // namespace app
