#include "app/request_handler.hpp"

#include <ctime>
#include <iostream>
#include <mutex>

#include <boost/thread/future.hpp>
#include <boost/thread/locks.hpp>

#include "app/apply.hpp"
#include "protocol/parse.hpp"
#include "protocol/render.hpp"

namespace app {

RequestHandler::RequestHandler(exchange::Engine& engine, store::Batcher& batcher)
    : engine_(engine), batcher_(batcher) {}

void RequestHandler::handle(std::string_view payload, Reply done) {
  protocol::Command cmd = protocol::parse(payload);
  if (cmd.kind == protocol::Command::Kind::Invalid) {
    done(protocol::render(protocol::Result::failure(cmd.error)));
    return;
  }

  const std::int64_t now = std::time(nullptr);
  protocol::Result result;
  store::Ticket ticket;
  bool internal_error = false;
  if (cmd.is_read_only()) {
    boost::shared_lock<boost::shared_mutex> lock(engine_lock_);
    exchange::Effects none;
    result = apply(cmd, engine_, now, none);
    ticket = batcher_.visible_ticket();
  } else {
    std::unique_lock<boost::shared_mutex> lock(engine_lock_);
    exchange::Effects fx;
    try {
      result = apply(cmd, engine_, now, fx);
      ticket = fx.empty() ? batcher_.visible_ticket() : batcher_.submit(std::move(fx));
    } catch (const std::exception& e) {
      // The engine may be half-changed: its open batch must not be written, and the engine
      // is rebuilt from the database.
      std::cerr << "exchange-server: internal error applying a request: " << e.what() << "\n";
      batcher_.poison_open_batch();
      ticket = batcher_.visible_ticket();
      internal_error = true;
    }
  }

  std::string xml = internal_error ? std::string() : protocol::render(result);
  batcher_.when_durable(ticket, [xml = std::move(xml), done = std::move(done)](bool committed) {
    if (committed && !xml.empty()) {
      done(xml);
    } else {
      done(protocol::render(protocol::Result::failure(
          "Internal error: the request was not applied (the database write failed); "
          "it is safe to retry")));
    }
  });
}

std::string RequestHandler::handle_blocking(std::string_view payload) {
  boost::promise<std::string> reply;
  boost::unique_future<std::string> future = reply.get_future();
  handle(payload, [&reply](std::string xml) { reply.set_value(std::move(xml)); });
  return future.get();
}

}  // namespace app
