#include "floor/floor_handler.hpp"

#include <ctime>
#include <utility>

#include "app/outcome.hpp"
#include "market/effects.hpp"
#include "net/framing.hpp"
#include "serving/reply_errors.hpp"

namespace floor_server {

std::string FloorHandler::committed_reply(std::int64_t seq) {
  // Built by hand rather than by protocol::render: rendering is part of what the server does
  // and the floor leaves out. About the length of the server's reply to one order.
  return "<results><opened sym=\"FLOOR\" amount=\"1\" limit=\"1\" id=\"" + std::to_string(seq) +
         "\"/></results>";
}

void FloorHandler::handle(std::string_view payload, const auth::Caller&, Reply done) {
  // No engine, so no engine lock: Batcher::submit assigns the seq under its own mutex, which
  // is all the ordering a journal of opaque payloads needs. first_order_id 0 marks a floor row
  // (the engine's ids start at 1), so an exchange-server replaying this journal refuses it.
  const std::int64_t now = std::time(nullptr);
  auto entry = batcher_.submit({0, now, 0, std::string(payload), {}}, market::Effects{});
  batcher_.when_durable(
      entry.ticket, [seq = entry.seq, done = std::move(done)](store::CommitResult outcome) {
        // The same answers as the server's (app/outcome.hpp, serving/reply_errors.hpp): only
        // a committed row is acknowledged.
        const auto error = app::error_of(app::outcome_of(outcome));
        done(error ? net::framing_error_reply(serving::error_text(*error)) : committed_reply(seq));
      });
}

}  // namespace floor_server
