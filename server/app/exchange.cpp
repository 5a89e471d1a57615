#include "app/exchange.hpp"

#include <ctime>
#include <mutex>
#include <sstream>

#include <boost/thread/locks.hpp>

#include "app/replay.hpp"
#include "store/watchdog.hpp"
#include "util/log.hpp"

namespace app {

Exchange::Exchange(ExchangeOptions options, Metrics& metrics, const store::StopFlag& stop,
                   std::function<void()> on_commit)
    : options_(std::move(options)),
      metrics_(metrics),
      stop_(stop),
      on_commit_(std::move(on_commit)),
      closed_(options_.closed_orders_cached),
      projector_(options_.conninfo, options_.writer_epoch, options_.db_timeout,
                 options_.journal_keep, options_.projector_delay,
                 [this](const std::string& why) { fence(why); }),
      writer_(options_.conninfo, options_.writer_epoch, options_.db_timeout, options_.db_timeout),
      archive_(options_.conninfo, options_.db_timeout),
      batcher_(
          [this](const store::Batch& batch, store::Ticket ticket) {
            const auto started = std::chrono::steady_clock::now();
            writer_.write(batch, ticket);
            metrics_.committed(batch.requests, std::chrono::steady_clock::now() - started);
            if (on_commit_) on_commit_();
          },
          [this](store::Batcher&, store::Ticket failed, store::Outcome outcome) {
            metrics_.commit_failed();
            recover(failed, outcome);
          },
          [this](store::Batch&& committed) {
            const std::int64_t through = committed.journal.back().seq;
            projector_.enqueue(std::move(committed), through);
            // Backpressure: the commit thread, and so every reply, waits while the projection
            // is too far behind. Only a projector that cannot write for a long time gets here.
            projector_.wait_pending_below(kMaxProjectionLag);
          }) {}

Exchange::~Exchange() { stop(true); }

void Exchange::load(store::Database& db) {
  projector_.start();
  std::unique_lock<boost::shared_mutex> lock(engine_lock_);
  batcher_.set_next_seq(load_state(db, engine_, closed_, projector_).last_seq + 1);
}

void Exchange::start() { batcher_.start(); }

void Exchange::stop(bool forced) {
  batcher_.stop();
  projector_.stop(forced ? std::chrono::seconds(0) : std::chrono::seconds(5));
}

void Exchange::fence(const std::string& why) {
  if (fenced_.exchange(true)) return;
  EXCHANGE_LOG(error) << "fenced: " << why << "; stepping down";
  // Nothing more reaches the database from here: the next append and projection fail at once.
  writer_.fence(why);
  projector_.fence();
  if (options_.on_fenced) options_.on_fenced();
}

void Exchange::abandon() {
  writer_.abandon();
  projector_.release_waits();
  store::Watchdog::shared().fire_all();
}

void Exchange::complete_from_archive(const std::string& account, Applied& applied) {
  for (const auto& lookup : applied.archive_lookups) {
    protocol::ResultItem& item = applied.result.items[lookup.index];
    try {
      auto status = archive_.find(account, lookup.id);
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

void Exchange::submit(const protocol::Command& cmd, std::string_view payload,
                      const Prepare& prepare, Send send) {
  using Clock = std::chrono::steady_clock;
  // The only clock reading of a request: the journal keeps it, so a replay applies the same.
  const std::int64_t now = std::time(nullptr);
  Applied applied;
  store::Ticket ticket;
  bool journaled = false;  // its entry joined the open batch: the reply waits for its commit
  if (cmd.is_read_only()) {
    boost::shared_lock<boost::shared_mutex> lock(engine_lock_);
    if (fenced_) return send(Outcome::Fenced, {});
    if (!available_) return send(Outcome::Unavailable, {});
    exchange::Effects none;
    applied = apply(cmd, engine_, now, none);
    ticket = batcher_.visible_ticket();
  } else {
    std::unique_lock<boost::shared_mutex> lock(engine_lock_);
    if (fenced_) return send(Outcome::Fenced, {});
    if (!available_) return send(Outcome::Unavailable, {});
    exchange::Effects fx;
    try {
      const exchange::OrderId first_order_id = engine_.next_order_id();
      applied = apply(cmd, engine_, now, fx);
      if (fx.empty()) {
        // Changed nothing: a replay needs no journal entry for it.
        ticket = batcher_.visible_ticket();
      } else {
        // A forgotten order is read from the SQL tables: only once the projection has it.
        const auto closed = exchange::Engine::closed_orders(fx);
        auto entry = batcher_.submit({0, now, first_order_id, std::string(payload)}, std::move(fx));
        ticket = entry.ticket;
        journaled = true;
        closed_.note(closed, entry.seq);
        closed_.forget_projected(engine_, projector_.projected_seq());
      }
    } catch (const std::exception& e) {
      // The engine may be half-changed: its open batch must not be written, and the engine
      // is rebuilt from the database.
      EXCHANGE_LOG(error) << "internal error applying a request: " << e.what();
      batcher_.poison_open_batch();
      ticket = batcher_.visible_ticket();
      batcher_.when_durable(
          ticket, [send = std::move(send)](store::Outcome) { send(Outcome::InternalError, {}); });
      return;
    }
  }

  if (!applied.archive_lookups.empty()) complete_from_archive(cmd.account, applied);
  std::string prepared = prepare(applied.result);
  const auto applied_at = Clock::now();
  batcher_.when_durable(ticket, [this, prepared = std::move(prepared), send = std::move(send),
                                 journaled, applied_at](store::Outcome outcome) mutable {
    if (journaled) metrics_.commit_waited(Clock::now() - applied_at);
    switch (outcome) {
      case store::Outcome::Committed:
        return send(Outcome::Durable, std::move(prepared));
      case store::Outcome::Unknown:
        return send(Outcome::Unknown, {});
      case store::Outcome::NotApplied:
        return send(Outcome::NotApplied, {});
      case store::Outcome::Fenced:
        return send(Outcome::Fenced, {});
    }
  });
}

Metrics::StateGauges Exchange::state() {
  Metrics::StateGauges st;
  st.available = available() ? 1 : 0;
  st.journal_seq = static_cast<long>(projector_.queued_seq());
  st.projected_seq = static_cast<long>(projector_.projected_seq());
  boost::shared_lock<boost::shared_mutex> lock(engine_lock_, boost::try_to_lock);
  if (lock.owns_lock()) st.orders_resting = static_cast<long>(engine_.order_count());
  return st;
}

exchange::OrderId Exchange::next_order_id() {
  boost::shared_lock<boost::shared_mutex> lock(engine_lock_);
  return engine_.next_order_id();
}

std::size_t Exchange::order_count() {
  boost::shared_lock<boost::shared_mutex> lock(engine_lock_);
  return engine_.order_count();
}

std::string Exchange::summary() const {
  const auto stats = batcher_.stats();
  const auto counts = writer_.counts();
  std::ostringstream out;
  out << store::Batcher::describe(stats) << "; database: " << store::Watchdog::shared().timeouts()
      << " calls cut off by --db-timeout-ms, " << counts.broken_commits
      << " commits on a broken connection, " << counts.reconnects << " write reconnects, "
      << reloads_.load() << " state reloads";
  return out.str();
}

}  // namespace app
