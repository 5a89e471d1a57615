#include "app/request_handler.hpp"

#include <chrono>
#include <ctime>
#include <mutex>

#include <boost/thread/locks.hpp>

#include "app/apply.hpp"
#include "app/log.hpp"
#include "protocol/parse.hpp"
#include "protocol/render.hpp"

namespace app {

RequestHandler::RequestHandler(exchange::Engine& engine, store::Batcher& batcher,
                               store::OrderArchive& archive, const store::Projector& projector,
                               std::size_t closed_orders_cached)
    : engine_(engine),
      batcher_(batcher),
      archive_(archive),
      projector_(projector),
      closed_orders_cached_(closed_orders_cached) {}

namespace {

// Completes the <status> of queried orders that only the database still holds.
void complete_from_archive(const std::string& account, Applied& applied,
                           store::OrderArchive& archive) {
  for (const auto& lookup : applied.archive_lookups) {
    protocol::ResultItem& item = applied.result.items[lookup.index];
    try {
      auto status = archive.find(account, lookup.id);
      if (status) {
        item.status = std::move(*status);
        continue;
      }
      item.message = "No such order for this account";
    } catch (const std::exception& e) {
      EXCHANGE_LOG(error) << "reading order " << lookup.id << " failed: " << e.what();
      item.message = "Internal error: the order could not be read from the database; retry";
    }
    item.kind = protocol::ResultItem::Kind::Error;
  }
}

}  // namespace

void RequestHandler::handle(std::string_view payload, Reply done) {
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  protocol::Command cmd = protocol::parse(payload);
  const Metrics::Root root = cmd.kind == protocol::Command::Kind::Create ? Metrics::Root::Create
                             : cmd.kind == protocol::Command::Kind::Transactions
                                 ? Metrics::Root::Transactions
                                 : Metrics::Root::Invalid;
  // Every way out goes through here, so each reply is counted once with its outcome.
  auto answer = [metrics = metrics_, root, started, done = std::move(done)](
                    Metrics::Outcome outcome, std::string xml) {
    if (metrics) metrics->request_answered(root, outcome, Clock::now() - started);
    done(std::move(xml));
  };
  if (cmd.kind == protocol::Command::Kind::Invalid)
    return answer(Metrics::Outcome::Rejected,
                  protocol::render(protocol::Result::failure(cmd.error)));

  const std::int64_t now = std::time(nullptr);
  const std::string unavailable =
      "Service unavailable: the database cannot be reached; nothing was applied, retry later";
  Applied applied;
  store::Ticket ticket;
  bool internal_error = false;
  bool submitted = false;  // effects joined the open batch: the reply waits for their commit
  if (cmd.is_read_only()) {
    boost::shared_lock<boost::shared_mutex> lock(engine_lock_);
    if (!available_)
      return answer(Metrics::Outcome::Unavailable,
                    protocol::render(protocol::Result::failure(unavailable)));
    exchange::Effects none;
    applied = apply(cmd, engine_, now, none);
    ticket = batcher_.visible_ticket();
  } else {
    std::unique_lock<boost::shared_mutex> lock(engine_lock_);
    if (!available_)
      return answer(Metrics::Outcome::Unavailable,
                    protocol::render(protocol::Result::failure(unavailable)));
    exchange::Effects fx;
    try {
      const exchange::OrderId first_order_id = engine_.next_order_id();
      applied = apply(cmd, engine_, now, fx);
      if (fx.empty()) {
        // Changed nothing: a replay needs no journal entry for it.
        ticket = batcher_.visible_ticket();
      } else {
        auto closed = exchange::Engine::closed_orders(fx);
        auto entry = batcher_.submit({0, now, first_order_id, std::string(payload)}, std::move(fx));
        ticket = entry.ticket;
        submitted = true;
        // A forgotten order is read from the SQL tables: only once the projection has it.
        engine_.note_closed(closed, static_cast<std::uint64_t>(entry.seq));
        engine_.forget_closed(static_cast<std::uint64_t>(projector_.projected_seq()),
                              closed_orders_cached_);
      }
    } catch (const std::exception& e) {
      // The engine may be half-changed: its open batch must not be written, and the engine
      // is rebuilt from the database.
      EXCHANGE_LOG(error) << "internal error applying a request: " << e.what();
      batcher_.poison_open_batch();
      ticket = batcher_.visible_ticket();
      internal_error = true;
    }
  }

  if (!applied.archive_lookups.empty()) complete_from_archive(cmd.account, applied, archive_);
  std::string xml = internal_error ? std::string() : protocol::render(applied.result);
  const auto applied_at = Clock::now();
  batcher_.when_durable(ticket, [xml = std::move(xml), answer = std::move(answer), submitted,
                                 applied_at, metrics = metrics_](store::Outcome outcome) {
    if (submitted && metrics) metrics->commit_waited(Clock::now() - applied_at);
    if (outcome == store::Outcome::Committed && !xml.empty()) {
      answer(Metrics::Outcome::Ok, xml);
    } else if (outcome == store::Outcome::Unknown) {
      answer(Metrics::Outcome::Failed,
             protocol::render(protocol::Result::failure(
                 "Internal error: the database connection broke while this request was being "
                 "committed, and the database could not be asked whether it was; query your "
                 "orders before retrying")));
    } else {
      answer(Metrics::Outcome::Failed,
             protocol::render(protocol::Result::failure(
                 "Internal error: the request was not applied (the database write failed); "
                 "it is safe to retry")));
    }
  });
}

}  // namespace app
