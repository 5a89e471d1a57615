#include "app/request_handler.hpp"

#include <chrono>

#include "protocol/parse.hpp"
#include "protocol/render.hpp"

namespace app {
namespace {

// The error reply for each way a request can end without its result.
std::string failure_text(Exchange::Outcome outcome) {
  switch (outcome) {
    case Exchange::Outcome::Unavailable:
      return "Service unavailable: the database cannot be reached; nothing was applied, retry "
             "later";
    case Exchange::Outcome::Unknown:
      return "Internal error: the database connection broke while this request was being "
             "committed, and the database could not be asked whether it was; query your "
             "orders before retrying";
    case Exchange::Outcome::Fenced:
      // Not "retry": this server will not serve again; the one that took over will.
      return "Service unavailable: another exchange server took over this database and this "
             "one has stepped down; nothing was applied. Send requests to the server now in "
             "charge";
    case Exchange::Outcome::InternalError:
      return "Internal error: the request was not applied; it is safe to retry";
    case Exchange::Outcome::NotApplied:
    case Exchange::Outcome::Durable:
      break;
  }
  return "Internal error: the request was not applied (the database write failed); it is safe "
         "to retry";
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

void RequestHandler::handle(std::string_view payload, Reply done) {
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  const protocol::Command cmd = protocol::parse(payload);
  const Metrics::Root root = root_of(cmd);
  if (cmd.kind == protocol::Command::Kind::Invalid) {
    metrics_.request_answered(root, Metrics::Outcome::Rejected, Clock::now() - started);
    return done(protocol::render(protocol::Result::failure(cmd.error)));
  }
  exchange_.submit(
      cmd, payload, [](const protocol::Result& result) { return protocol::render(result); },
      [&metrics = metrics_, root, started, done = std::move(done)](Exchange::Outcome outcome,
                                                                   std::string xml) {
        Metrics::Outcome counted =
            outcome == Exchange::Outcome::Durable ? Metrics::Outcome::Ok
            : outcome == Exchange::Outcome::Unavailable || outcome == Exchange::Outcome::Fenced
                ? Metrics::Outcome::Unavailable
                : Metrics::Outcome::Failed;
        if (outcome != Exchange::Outcome::Durable)
          xml = protocol::render(protocol::Result::failure(failure_text(outcome)));
        metrics.request_answered(root, counted, Clock::now() - started);
        done(std::move(xml));
      });
}

}  // namespace app
