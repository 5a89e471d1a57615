#pragma once
// The durable engine (the durability core), behind one submit(): the engine and its lock, whether
// it may serve, the group commit of the journal, the projector that keeps the SQL tables, the cache
// of closed orders, the archive that answers for the orders it dropped, and recovery after a failed
// commit. The rules it keeps:
//   - a result is shown only once every journal entry it reflects is committed;
//   - the engine never keeps anything the journal does not have: a failed commit fails every
//     request that could have seen it, and the engine is rebuilt from the database (the
//     projection, then the journal after it) before anything else is served;
//   - the projection lags the journal by at most max_projection_rows rows, so a restart
//     replays a bounded journal and queued effects take bounded memory;
//   - once another server took over the database (fenced: leadership/writer_lock.hpp), nothing more
//     is written or served, and on_fenced tells the process to step down.
// It knows nothing of XML or sockets: it takes parsed commands and hands back results.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include <boost/thread/shared_mutex.hpp>

#include "app/apply.hpp"
#include "app/closed_orders.hpp"
#include "app/health.hpp"
#include "app/outcome.hpp"
#include "app/pending.hpp"
#include "gates/admission.hpp"
#include "leadership/fencing.hpp"
#include "market/engine.hpp"
#include "observability/metrics.hpp"
#include "protocol/command.hpp"
#include "protocol/result.hpp"
#include "store/batcher.hpp"
#include "store/order_archive.hpp"
#include "store/ports.hpp"
#include "store/projector.hpp"
#include "util/stop_flag.hpp"

namespace app {

struct DurableEngineOptions {
  // How the group commit gathers under load (--commit-wait-us, --commit-batch).
  store::CommitGather commit_gather;
  // Bounds every call on the store (--db-timeout-ms): the projector spreads a write over at
  // most a quarter of it.
  std::chrono::milliseconds db_timeout = store::kDefaultDbTimeout;
  // Closed orders kept in memory for queries (--closed-orders-cached).
  std::size_t closed_orders_cached = kDefaultClosedOrdersCached;
  // Threads, and so PostgreSQL connections at most, that read queried orders no longer in
  // memory (--archive-connections).
  std::size_t archive_connections = 2;
  // Projected journal entries kept beyond the newest this many are deleted (--journal-keep;
  // 0 keeps the whole journal).
  std::int64_t journal_keep = 0;
  // What one request may cost and what clients may make the exchange hold.
  Limits limits;
  // Commits pause while this many rows wait to be projected (--max-projection-rows; about
  // 200 MB of queued effects at the default, and a restart replays at most about as many
  // journal entries).
  std::size_t max_projection_rows = 1000000;
  // Past this many rows waiting to be projected, large requests wait before they start
  // (--heavy-pause-projection-rows), so the rows they make cannot push the projection to
  // max_projection_rows, where every reply waits.
  std::size_t heavy_pause_projection_rows = 500000;
  // How long committed effects gather before a projection write (--projection-gather-ms).
  std::chrono::milliseconds projection_gather = store::Projector::kDefaultGather;
  // Test aid: holds every projection write back this long (0 in production).
  std::chrono::milliseconds projector_delay{0};
  // The fencing token this process was given (leadership::WriterLock::begin_epoch): every
  // journal append and projection write carries it.
  leadership::FencingToken fencing;
  // Runs once, on whichever thread found out, when another server took over the database.
  std::function<void()> on_fenced;
  // Whether this server's writer lease still holds (leadership::WriterLock::lease_valid); while it
  // does not, every request is answered "unavailable" at once, reads included: a standby may
  // be taking over. Empty: always. Called for every request: must be cheap.
  std::function<bool()> lease_valid;
  // --reads-on-lease: a read is answered once the lease is found valid after it, without a
  // proof commit (store::Batcher::proof_ticket). Off: every read waits for one.
  bool reads_on_lease = false;
};

struct Followed;

class DurableEngine {
 public:
  // Closed orders a mutating request drops from memory at most (ClosedOrders).
  static constexpr std::size_t kForgetPerRequest = 64;
  // Whether the projection is past options.heavy_pause_projection_rows. Lock-free enough for
  // every request.
  bool projection_behind() const {
    return projector_.pending_rows() >= options_.heavy_pause_projection_rows;
  }

  // `prepare` runs once with the result (render it there: the commit thread must stay free):
  // at once on the submitting thread, or, for a request that queries orders only PostgreSQL
  // still holds, on an archive thread once they are read.
  using Prepare = std::function<std::string(const protocol::Result&)>;

  // `store` opens the journal writer, projection writer, state readers and archive readers
  // (store/ports.hpp); it must outlive the engine. `on_commit` runs after each successful
  // commit (health: the database answered).
  DurableEngine(DurableEngineOptions options, store::Store& store, Metrics& metrics,
                const util::StopFlag& stop, std::function<void()> on_commit = nullptr);
  ~DurableEngine();
  DurableEngine(const DurableEngine&) = delete;
  DurableEngine& operator=(const DurableEngine&) = delete;

  // Start-up: starts the projector and fills the engine from the store (the projection, then
  // the journal after it). Throws if the store cannot be read.
  void load();
  // Start-up of a standby taking over (app/adopt.cpp), instead of load(): starts the projector
  // and takes the standby's state, which is what load() would build now.
  void adopt(Followed&& state);
  // Starts committing.
  void start();
  // Applies a valid command (never Invalid). The returned Pending ends exactly once with the
  // outcome (Durable, Unavailable, Fenced, InternalError, NotApplied or Unknown) and what
  // `prepare` returned (empty unless Durable): at once, or later on the commit thread or an
  // archive thread (app/pending.hpp).
  Pending submit(const protocol::Command& cmd, std::string_view payload, const Prepare& prepare);
  // Commits what is pending and stops. The projector gets up to 5 s to catch up unless
  // `forced` (what it has not written is in the journal: the next start replays it).
  void stop(bool forced);
  // The shutdown's grace period is over: nothing more is committed, every wait on PostgreSQL
  // ends now, and the requests still waiting get their errors. Thread-safe.
  void abandon();

  // Another server took over the database (a write found its writer epoch, or the writer
  // lock's keeper found the lock taken): from now on nothing is written or served, and
  // options.on_fenced runs. Logs why once. Thread-safe; later calls do nothing.
  void fence(const std::string& why);
  bool fenced() const { return fenced_.load(); }

  // Any thread, no lock (for /healthz, which must not wait behind a reload).
  bool available() const { return available_.load() && !fenced_.load(); }
  // For /metrics; never waits for the engine lock (a reload may hold it for long).
  Metrics::StateGauges state();
  // What readiness judges: how far the projection and the commits are behind. Lock-free.
  Backlog backlog() const;
  std::uint64_t write_reconnects() const { return writer_->counts().reconnects; }
  store::OrderArchive::Counts archive_counts() const { return archive_.counts(); }
  market::OrderId next_order_id();
  std::size_t order_count();
  // What it did, for the log at exit.
  std::string summary() const;

 private:
  // The group commit's RecoverFn (recovery.cpp): fails what could have seen batch `failed`,
  // serves "unavailable" and rebuilds the engine until it succeeds or the server stops.
  void recover(store::Ticket failed, store::CommitResult outcome);
  // submit()'s work: ends `pending` (at once, or once what it reflects is durable).
  void apply_and_reply(const protocol::Command& cmd, std::string_view payload,
                       const Prepare& prepare, const Pending& pending);
  // Hands a request with <status> items of orders only the database still holds to the
  // archive, which reads them off this thread and then prepares and sends the reply.
  // Each status read counts against the reply's budget (`admission`).
  void complete_from_archive(const std::string& account, Applied&& applied, Admission&& admission,
                             store::Ticket ticket, bool journaled, const Prepare& prepare,
                             const Pending& pending);
  // Whether the writer lease has run out. Checked again after a request's state is read and
  // before an answer that no journal commit proves is given: a read that finds the lease still
  // valid then saw everything any server acknowledged before it arrived, since a new leader
  // acknowledges nothing until this lease has expired (a pause between the read and the check
  // is caught by the check; DURABILITY.md, "Reads").
  bool lease_lost() const { return options_.lease_valid && !options_.lease_valid(); }
  // Under the engine lock, for a request answered from the state without a journal entry of
  // its own: the ticket its reply waits for. A commit that starts after it (proving that no
  // other server had taken over by then) unless --reads-on-lease; then the last one covering
  // what it saw.
  store::Ticket read_ticket() {
    return options_.reads_on_lease ? batcher_.visible_ticket() : batcher_.proof_ticket();
  }
  // Ends `pending` with `prepared` once `ticket` is durable (or the outcome if it failed).
  // `journaled`: the request's own entry is in that batch (its wait is measured).
  void reply_when_durable(store::Ticket ticket, std::string prepared, const Pending& pending,
                          bool journaled);

  DurableEngineOptions options_;
  store::Store& store_;
  Metrics& metrics_;
  const util::StopFlag& stop_;
  std::function<void()> on_commit_;
  market::Engine engine_;
  // Exclusive for changes, shared for read-only requests; a reload holds it exclusively.
  boost::shared_mutex engine_lock_;
  // Changed under the exclusive lock; atomic so health checks can read it without.
  std::atomic<bool> available_{true};
  std::atomic<bool> fenced_{false};  // for good, once set
  ClosedOrders closed_;              // under the exclusive lock
  store::Projector projector_;
  std::unique_ptr<store::JournalWriter> writer_;
  std::atomic<std::uint64_t> reloads_{0};
  // Its thread uses everything above, so it is destroyed (stopped) before them.
  store::Batcher batcher_;
  // Last: its threads hand replies to the batcher, so it is stopped first (stop() does too).
  store::OrderArchive archive_;
};

}  // namespace app
