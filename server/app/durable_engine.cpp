#include "app/durable_engine.hpp"

#include <ctime>
#include <mutex>
#include <sstream>

#include <boost/thread/locks.hpp>

#include "app/archived_orders.hpp"
#include "app/replay.hpp"
#include "store/watchdog.hpp"
#include "util/log.hpp"

namespace app {

DurableEngine::DurableEngine(DurableEngineOptions options, store::Store& store, Metrics& metrics,
                             const util::StopFlag& stop, std::function<void()> on_commit)
    : options_(std::move(options)),
      store_(store),
      metrics_(metrics),
      stop_(stop),
      on_commit_(std::move(on_commit)),
      closed_(options_.closed_orders_cached),
      projector_(store.projection_writer(options_.fencing), options_.db_timeout,
                 options_.journal_keep, options_.projector_delay,
                 [this](const std::string& why) { fence(why); }),
      writer_(store.journal_writer(options_.fencing)),
      batcher_(
          [this](const store::JournalBatch& batch, store::Ticket ticket) {
            const auto started = std::chrono::steady_clock::now();
            writer_->write(batch.entries, ticket);
            metrics_.committed(batch.requests, std::chrono::steady_clock::now() - started);
            if (on_commit_) on_commit_();
          },
          [this](store::Batcher&, store::Ticket failed, store::CommitResult outcome) {
            metrics_.commit_failed();
            recover(failed, outcome);
          },
          [this](store::DeferredEffects&& effects, std::int64_t through_seq) {
            projector_.enqueue(std::move(effects), through_seq);
            // Backpressure, the last resort: the commit thread, and so every reply, waits while
            // the projection is too far behind. Large requests stop starting well before this
            // (projection_behind(), RequestHandler), so only a projector that cannot write for
            // a long time, or a flood of small requests, gets here.
            projector_.wait_pending_below(options_.max_projection_rows);
          }),
      archive_({options_.archive_connections}, [&store] { return store.archive_reader(); }) {
  projector_.gather_for(options_.projection_gather);
  batcher_.gather(options_.commit_gather);
}

DurableEngine::~DurableEngine() { stop(true); }

void DurableEngine::load() {
  projector_.start();
  auto reader = store_.state_reader();
  std::unique_lock<boost::shared_mutex> lock(engine_lock_);
  batcher_.set_next_seq(load_state(*reader, engine_, closed_, projector_).last_seq + 1);
}

void DurableEngine::start() { batcher_.start(); }

void DurableEngine::stop(bool forced) {
  // Lookups still queued are answered first: they hand their replies to the batcher.
  archive_.stop();
  batcher_.stop();
  projector_.stop(forced ? std::chrono::seconds(0) : std::chrono::seconds(5));
}

void DurableEngine::fence(const std::string& why) {
  if (fenced_.exchange(true)) return;
  EXCHANGE_LOG(error) << "fenced: " << why << "; stepping down";
  // Nothing more reaches the database from here: the next append and projection fail at once.
  writer_->fence(why);
  projector_.fence();
  if (options_.on_fenced) options_.on_fenced();
}

void DurableEngine::abandon() {
  archive_.abandon();
  writer_->abandon();
  projector_.release_waits();
  store::Watchdog::shared().fire_all();
}

void DurableEngine::complete_from_archive(const std::string& account, Applied&& applied,
                                          Admission&& admission, store::Ticket ticket,
                                          bool journaled, const Prepare& prepare,
                                          const Pending& pending) {
  auto ids = archive_ids(applied);
  archive_.find(account, std::move(ids),
                [this, applied = std::move(applied), admission = std::move(admission), ticket,
                 journaled, prepare, pending](store::OrderArchive::Answer answer) mutable {
                  if (answer.kind == store::OrderArchive::Answer::Kind::Failed)
                    EXCHANGE_LOG(error) << "reading " << applied.archive_lookups.size()
                                        << " archived orders failed: " << answer.error;
                  std::string prepared;
                  try {
                    complete_lookups(applied, answer, options_.archive_connections, admission);
                    prepared = prepare(applied.result);
                  } catch (const std::exception& e) {
                    // Out of memory while rendering: whatever the request changed is committed
                    // or fails with its batch, and the client cannot tell which.
                    EXCHANGE_LOG(error) << "preparing a reply failed: " << e.what();
                    return pending.end(journaled ? Outcome::Unknown : Outcome::InternalError);
                  }
                  reply_when_durable(ticket, std::move(prepared), pending, journaled);
                });
}

void DurableEngine::reply_when_durable(store::Ticket ticket, std::string prepared,
                                       const Pending& pending, bool journaled) {
  using Clock = std::chrono::steady_clock;
  const auto applied_at = Clock::now();
  batcher_.when_durable(ticket, [this, prepared = std::move(prepared), pending, journaled,
                                 applied_at](store::CommitResult outcome) mutable {
    if (journaled) metrics_.commit_waited(Clock::now() - applied_at);
    Outcome ended = outcome_of(outcome);
    // Nothing of its own was to be written: it was not applied, the database was away.
    if (!journaled && ended != Outcome::Durable && ended != Outcome::Fenced)
      ended = Outcome::Unavailable;
    pending.end(ended, ended == Outcome::Durable ? std::move(prepared) : std::string());
  });
}

Pending DurableEngine::submit(const protocol::Command& cmd, std::string_view payload,
                              const Prepare& prepare) {
  Pending pending;
  apply_and_reply(cmd, payload, prepare, pending);
  return pending;
}

void DurableEngine::apply_and_reply(const protocol::Command& cmd, std::string_view payload,
                                    const Prepare& prepare, const Pending& pending) {
  // The only clock reading of a request: the journal keeps it, so a replay applies the same.
  const std::int64_t now = std::time(nullptr);
  Applied applied;
  Admission admission = Admission::live(options_.limits, payload.size());
  store::Ticket ticket;
  bool journaled = false;  // its entry joined the open batch: the reply waits for its commit
  // Before waiting for the engine lock, which a reload holds while it reads PostgreSQL (for as
  // long as the database takes to answer): requests arriving then hear "unavailable" at once.
  // Checked again under the lock, where it is exact.
  if (fenced_) return pending.end(Outcome::Fenced);
  if (!available_) return pending.end(Outcome::Unavailable);
  // A lease run out: a standby may be taking over. Refused early here; what proves a read
  // fresh is its proof commit (read_ticket) and the lease checked again after it is read. (A write
  // could not be acknowledged wrongly: its append checks the writer epoch in its own statement, so
  // it commits before the new leader's bump or not at all.)
  if (lease_lost()) return pending.end(Outcome::Unavailable);
  if (cmd.is_read_only()) {
    boost::shared_lock<boost::shared_mutex> lock(engine_lock_);
    if (fenced_) return pending.end(Outcome::Fenced);
    if (!available_) return pending.end(Outcome::Unavailable);
    market::Effects none;
    applied = apply(cmd, engine_, now, none, admission);
    if (lease_lost()) return pending.end(Outcome::Unavailable);
    ticket = read_ticket();
  } else {
    std::unique_lock<boost::shared_mutex> lock(engine_lock_);
    if (fenced_) return pending.end(Outcome::Fenced);
    if (!available_) return pending.end(Outcome::Unavailable);
    market::Effects fx;
    try {
      const market::OrderId first_order_id = engine_.next_order_id();
      applied = apply(cmd, engine_, now, fx, admission);
      if (fx.empty()) {
        // Changed nothing: a replay needs no journal entry for it. But its answer (a refusal
        // for the balance, an unknown order) was read from the state: proven like a read's.
        if (lease_lost()) return pending.end(Outcome::Unavailable);
        ticket = read_ticket();
      } else {
        // A forgotten order is read from the SQL tables: only once the projection has it.
        closed_.note(fx, batcher_.next_seq());
        auto entry = batcher_.submit(
            {0, now, first_order_id, std::string(payload), admission.refused()}, std::move(fx));
        ticket = entry.ticket;
        journaled = true;
        // A few at a time: a projection write makes thousands forgettable at once, and
        // dropping them all under the engine lock stalled every client for milliseconds
        // (the p99; docs/notes/performance-history.md, "Where the rest goes"). Each request closes
        // far fewer than this.
        closed_.forget_projected(engine_, projector_.projected_seq(), kForgetPerRequest);
      }
    } catch (const std::exception& e) {
      // The engine may be half-changed: its open batch must not be written, and the engine
      // is rebuilt from the database.
      EXCHANGE_LOG(error) << "internal error applying a request: " << e.what();
      batcher_.poison_open_batch();
      ticket = batcher_.visible_ticket();
      batcher_.when_durable(
          ticket, [pending](store::CommitResult) { pending.end(Outcome::InternalError); });
      return;
    }
  }

  // Orders only the database still holds are read off this thread (it may be the event loop's).
  if (!applied.archive_lookups.empty())
    return complete_from_archive(cmd.account, std::move(applied), std::move(admission), ticket,
                                 journaled, prepare, pending);
  reply_when_durable(ticket, prepare(applied.result), pending, journaled);
}

Backlog DurableEngine::backlog() const {
  Backlog b;
  b.unprojected_rows = projector_.pending_rows();
  b.oldest_unprojected = projector_.oldest_unprojected();
  b.commit_stalled = batcher_.commit_stalled_for();
  const auto failures = projector_.failures();
  b.projection_failures_in_a_row = failures.in_a_row;
  b.projection_failures_total = failures.total;
  b.last_projection_error = failures.last_error;
  return b;
}

Metrics::StateGauges DurableEngine::state() {
  const Backlog b = backlog();
  Metrics::StateGauges st;
  st.projection_lag_rows = static_cast<long>(b.unprojected_rows);
  st.projection_lag_ms = static_cast<long>(b.oldest_unprojected.count());
  st.projection_failures = static_cast<long>(b.projection_failures_total);
  st.commit_stalled_ms = static_cast<long>(b.commit_stalled.count());
  st.available = available() ? 1 : 0;
  st.journal_seq = static_cast<long>(projector_.queued_seq());
  st.projected_seq = static_cast<long>(projector_.projected_seq());
  boost::shared_lock<boost::shared_mutex> lock(engine_lock_, boost::try_to_lock);
  if (lock.owns_lock()) st.orders_resting = static_cast<long>(engine_.open_order_count());
  return st;
}

market::OrderId DurableEngine::next_order_id() {
  boost::shared_lock<boost::shared_mutex> lock(engine_lock_);
  return engine_.next_order_id();
}

std::size_t DurableEngine::order_count() {
  boost::shared_lock<boost::shared_mutex> lock(engine_lock_);
  return engine_.order_count();
}

std::string DurableEngine::summary() const {
  const auto stats = batcher_.stats();
  const auto counts = writer_->counts();
  std::ostringstream out;
  out << store::Batcher::describe(stats) << "; database: " << store::Watchdog::shared().timeouts()
      << " calls cut off by --db-timeout-ms, " << counts.broken_commits
      << " commits on a broken connection, " << counts.reconnects << " write reconnects, "
      << reloads_.load() << " state reloads";
  return out.str();
}

}  // namespace app
