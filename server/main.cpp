// exchange-server: its flags and what it serves (TradingService: the durable engine loaded from
// PostgreSQL and its request handler). The process around it is cli::serve (cli/serve.hpp):
// the database's writer lock -> load state -> serve with the chosen concurrency model until
// SIGINT/SIGTERM -> finish in-flight requests within the grace period -> exit 0 (everything
// drained) or 3 (requests had to be failed). Another server holding the writer lock: exit 1 at
// start-up; another server taking the database over while this one serves (fenced): step
// down, exit 4. Bad flags: exit 2. With --standby (StandbyFollower, cli/role.hpp) it follows
// the active server's journal instead and becomes a TradingService when it takes over.
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <boost/program_options.hpp>

#include "app/admission.hpp"
#include "app/durable_engine.hpp"
#include "app/health.hpp"
#include "app/metrics.hpp"
#include "app/request_handler.hpp"
#include "app/standby.hpp"
#include "cli/role.hpp"
#include "cli/serve.hpp"
#include "cli/serving_flags.hpp"
#include "net/admin_http.hpp"
#include "net/buffer_budget.hpp"
#include "protocol/parse.hpp"
#include "store/order_archive.hpp"
#include "store/watchdog.hpp"
#include "util/log.hpp"

namespace po = boost::program_options;

namespace {

struct Config {
  cli::ServingFlags serving;  // port 12345, 0.0.0.0, --db, pool, threads, log level
  unsigned simulated_io_ms_per_child = 0;
  std::string metrics_path;
  bool reset = false;
  std::string schema_path;
  std::size_t max_request_bytes = 1 << 20;
  unsigned read_timeout_ms = 30000;
  std::size_t max_connections = 4096;
  std::size_t max_buffered_bytes = net::kDefaultMaxBufferedBytes;
  protocol::ParseLimits parse_limits;  // --max-children, --max-id-length, ...
  app::Limits limits;                  // --max-accounts, --max-reply-bytes, ...
  app::HandlerLimits handler_limits;   // --heavy-request-bytes, --max-memory-bytes, ...
  std::size_t closed_orders_cached = 100000;
  std::size_t archive_connections = 2;
  int db_wait_seconds = 30;
  unsigned writer_lock_wait_ms = 5000;
  unsigned heavy_wait_ms = 10000;  // --max-heavy-wait-ms, into handler_limits.heavy
  std::size_t max_projection_rows = 1000000;
  std::size_t heavy_pause_projection_rows = 500000;
  unsigned admin_port = 0;  // 0: no admin port
  std::string admin_bind = "127.0.0.1";
  std::size_t admin_max_connections = net::AdminLimits{}.max_connections;
  unsigned admin_timeout_ms = static_cast<unsigned>(net::AdminLimits{}.timeout.count());
  unsigned db_timeout_ms = 5000;
  unsigned ready_max_lag_ms = 10000;
  unsigned shutdown_grace_ms = 10000;
  std::int64_t journal_keep = 0;  // 0: keep the whole journal
  unsigned projection_gather_ms = store::Projector::kDefaultGather.count();
  unsigned projector_delay_ms = 0;  // hidden test aid
  bool standby = false;
  unsigned lease_ms = 5000;
  unsigned standby_poll_ms = 200;
};

// Returns false (after printing) when the process should exit with `exit_code`.
bool parse_flags(int argc, char** argv, Config& cfg, int& exit_code) {
  po::options_description opts("exchange-server: the order-matching exchange (XML over TCP)");
  cli::add_serving_flags(
      opts, cfg.serving,
      "IPv4 address to listen on; 0.0.0.0 serves every interface (only with --principals, or "
      "--allow-unauthenticated)",
      "PostgreSQL connection string or URI (default: $DATABASE_URL); for high availability list "
      "every node and ask for the writable one: "
      "postgresql://u@host1:5432,host2:5432/db?target_session_attrs=read-write");
  opts.add_options()(
      "metrics", po::value(&cfg.metrics_path),
      "write one CSV row per second to this file: time, arrivals, completions, mean and p99 "
      "service ms, threads, busy threads, queue length, open connections, RSS KiB, pool target, "
      "database timeouts and reconnects, projection lag (journal entries not yet in the "
      "tables)")(
      "simulated-io-ms-per-child",
      po::value(&cfg.simulated_io_ms_per_child)->default_value(cfg.simulated_io_ms_per_child),
      "benchmarking aid: each child of a request sleeps this many ms in the thread running the "
      "handler (outside every lock), as if it did blocking I/O; 0 in production")(
      "reset", po::bool_switch(&cfg.reset),
      "delete every account, symbol, order and execution before serving")(
      "schema", po::value(&cfg.schema_path),
      "apply this schema file instead of the built-in copy of schema.sql")(
      "max-request-bytes", po::value(&cfg.max_request_bytes)->default_value(cfg.max_request_bytes),
      "largest request accepted; longer ones are refused before they are read")(
      "read-timeout-ms", po::value(&cfg.read_timeout_ms)->default_value(cfg.read_timeout_ms),
      "how long a client may take to send a whole request, counted from the connection (or "
      "the previous reply on a session); then it gets an error and is closed")(
      "max-connections", po::value(&cfg.max_connections)->default_value(cfg.max_connections),
      "open connections beyond this many are told 'Server busy' and closed at once")(
      "max-buffered-bytes",
      po::value(&cfg.max_buffered_bytes)->default_value(cfg.max_buffered_bytes),
      "bytes all client connections together may buffer (requests being received or run, "
      "replies not yet written); beyond it a connection whose request needs more gets 'Server "
      "busy' and is closed, and connections with replies unwritten wait for their readers; "
      "at least --max-request-bytes")(
      "max-children",
      po::value(&cfg.parse_limits.max_children)->default_value(cfg.parse_limits.max_children),
      "most children of one <create> or <transactions> (each <symbol>'s children count too); "
      "a request with more is refused as a whole")(
      "max-id-length",
      po::value(&cfg.parse_limits.max_id_length)->default_value(cfg.parse_limits.max_id_length),
      "longest id attribute (account or order id), in characters; a request with a longer one "
      "is refused as a whole")(
      "max-symbol-length",
      po::value(&cfg.parse_limits.max_symbol_length)
          ->default_value(cfg.parse_limits.max_symbol_length),
      "longest sym attribute, in characters; a request with a longer one is refused as a whole")(
      "max-attributes",
      po::value(&cfg.parse_limits.max_attributes)->default_value(cfg.parse_limits.max_attributes),
      "most attributes on one element; a request with more is refused as a whole")(
      "max-accounts", po::value(&cfg.limits.max_accounts)->default_value(cfg.limits.max_accounts),
      "most accounts the exchange holds; creating one more is refused")(
      "max-symbols", po::value(&cfg.limits.max_symbols)->default_value(cfg.limits.max_symbols),
      "most symbols the exchange holds; creating one more is refused")(
      "max-open-orders",
      po::value(&cfg.limits.max_open_orders)->default_value(cfg.limits.max_open_orders),
      "most orders resting on all books together; an order that would rest beyond it is "
      "refused")("max-open-orders-per-account",
                 po::value(&cfg.limits.max_open_orders_per_account)
                     ->default_value(cfg.limits.max_open_orders_per_account),
                 "most resting orders of one account; an order that would rest beyond it is "
                 "refused")(
      "max-executions-per-request",
      po::value(&cfg.limits.max_executions_per_request)
          ->default_value(cfg.limits.max_executions_per_request),
      "most executions one request may cause (bounds the time it holds the engine and the rows "
      "it projects); an order that would go past it is refused before it matches")(
      "max-reply-ratio",
      po::value(&cfg.limits.max_reply_ratio)->default_value(cfg.limits.max_reply_ratio),
      "a reply may be this many times its request's size (64 KiB are always allowed); a "
      "<query> or <cancel> whose status would go past it is refused")(
      "max-reply-bytes",
      po::value(&cfg.limits.max_reply_bytes)->default_value(cfg.limits.max_reply_bytes),
      "the largest reply, whatever the request's size")(
      "heavy-request-bytes",
      po::value(&cfg.handler_limits.heavy.heavy_bytes)
          ->default_value(cfg.handler_limits.heavy.heavy_bytes),
      "a request this large or larger is heavy: heavy requests run one at a time on a thread of "
      "their own, so they cannot crowd out small ones")(
      "max-heavy-bytes-in-flight",
      po::value(&cfg.handler_limits.heavy.in_flight_bytes)
          ->default_value(cfg.handler_limits.heavy.in_flight_bytes),
      "heavy requests start only while the bytes of those started and not yet answered stay "
      "within this (one always may): it bounds what they add to a group commit")(
      "max-heavy-bytes-queued",
      po::value(&cfg.handler_limits.heavy.queued_bytes)
          ->default_value(cfg.handler_limits.heavy.queued_bytes),
      "heavy requests waiting for their turn may hold this many bytes; one more is refused "
      "with 'Server busy'")(
      "max-projection-rows",
      po::value(&cfg.max_projection_rows)->default_value(cfg.max_projection_rows),
      "while this many rows wait to be projected into the SQL tables, group commits (and so "
      "every reply) wait: bounds the memory of queued rows and the journal a restart replays")(
      "heavy-pause-projection-rows",
      po::value(&cfg.heavy_pause_projection_rows)->default_value(cfg.heavy_pause_projection_rows),
      "while this many rows wait to be projected, heavy requests wait before they start (below "
      "--max-projection-rows, so small requests keep being answered)")(
      "max-heavy-wait-ms", po::value(&cfg.heavy_wait_ms)->default_value(cfg.heavy_wait_ms),
      "a heavy request not started within this (the projection or the database is behind) is "
      "refused with 'Server busy'")(
      "max-memory-bytes",
      po::value(&cfg.handler_limits.max_memory_bytes)
          ->default_value(cfg.handler_limits.max_memory_bytes),
      "the memory budget: while the server's resident memory is over it, requests that create "
      "accounts, positions or orders are refused (queries and cancels still run); 0: none")(
      "db-wait", po::value(&cfg.db_wait_seconds)->default_value(cfg.db_wait_seconds),
      "seconds to keep retrying at start-up while PostgreSQL is unreachable")(
      "writer-lock-wait-ms",
      po::value(&cfg.writer_lock_wait_ms)->default_value(cfg.writer_lock_wait_ms),
      "one server writes a database: at start-up, how long to wait for its writer lock while "
      "another session holds it (a previous server may still be exiting); then exit 1 naming "
      "the holder")(
      "admin-port", po::value(&cfg.admin_port),
      "serve HTTP on this port for operators: GET /metrics (Prometheus text format) and GET "
      "/healthz (200 'ok', or 503 and why); off unless given")(
      "admin-bind", po::value(&cfg.admin_bind)->default_value(cfg.admin_bind),
      "address of the admin port (it has no authentication: keep it local unless a "
      "firewall guards it)")(
      "admin-max-connections",
      po::value(&cfg.admin_max_connections)->default_value(cfg.admin_max_connections),
      "admin connections open at once; at the cap a newcomer closes the oldest one that has "
      "not sent its whole request yet, so idle or slow clients cannot lock operators out")(
      "admin-timeout-ms", po::value(&cfg.admin_timeout_ms)->default_value(cfg.admin_timeout_ms),
      "an admin client must send its whole request within this, counted from the connection, "
      "and gets as long again to read the answer; then it is closed")(
      "db-timeout-ms", po::value(&cfg.db_timeout_ms)->default_value(cfg.db_timeout_ms),
      "longest wait for PostgreSQL: a commit or read without an answer this long closes its "
      "connection (the commit's outcome is then read from a fresh one) and the server "
      "reconnects; also sets libpq's connect_timeout, keepalives and tcp_user_timeout unless "
      "--db sets them (loading the whole state may take ten times as long)")(
      "ready-max-lag-ms", po::value(&cfg.ready_max_lag_ms)->default_value(cfg.ready_max_lag_ms),
      "/healthz answers 503 (not ready, and why) while the oldest journal entry not yet in the "
      "SQL tables, or the batch the group commit is at, is older than this; 200 again once "
      "caught up")(
      "shutdown-grace-ms", po::value(&cfg.shutdown_grace_ms)->default_value(cfg.shutdown_grace_ms),
      "after SIGINT/SIGTERM, how long in-flight requests may take to commit; then the rest get "
      "an error. Exit status: 0 if everything drained, 3 if requests had to be failed, 4 if it "
      "stepped down because another server took over the database, 1 on a fatal error (also "
      "when another server holds the database's writer lock at start-up), 2 on bad flags")(
      "projection-gather-ms",
      po::value(&cfg.projection_gather_ms)->default_value(cfg.projection_gather_ms),
      "committed effects gather this long before they are written into the SQL tables "
      "together (the last row per account, position and order wins, so under load fewer rows "
      "are written per request); written sooner once 100,000 rows wait or no request has "
      "changed anything for 50 ms. Under load the tables trail the journal by about this "
      "much plus one write")(
      "journal-keep", po::value(&cfg.journal_keep)->default_value(cfg.journal_keep),
      "journal entries to keep once the SQL tables hold their effects: older ones are deleted "
      "as the projection advances, so the journal stops growing (restarts need only the "
      "entries after the projection). 0 keeps the whole journal, every request ever accepted")(
      "standby", po::bool_switch(&cfg.standby),
      "run as the hot standby of the server that holds the database's writer lock: load the "
      "state, follow its journal (milliseconds behind), answer every request with a 'this is "
      "the standby' error and /healthz with 503, and take over by itself when that server's "
      "database session ends (it died) or its lease runs out (it is paused or cut off)")(
      "standby-poll-ms", po::value(&cfg.standby_poll_ms)->default_value(cfg.standby_poll_ms),
      "with --standby: how long it waits, once it has read the journal to its end, before "
      "reading it again (one statement each time). Longer costs the active server less and "
      "leaves the standby that much further behind (a takeover still reads the journal to its "
      "end first)")(
      "lease-ms", po::value(&cfg.lease_ms)->default_value(cfg.lease_ms),
      "the writer's lease: the server holding the writer lock renews it every third of this; "
      "one that could not renew it for this long answers every request 'unavailable', and a "
      "standby ends its lock session once it has expired and takes over")(
      "closed-orders-cached",
      po::value(&cfg.closed_orders_cached)->default_value(cfg.closed_orders_cached),
      "closed orders kept in memory for queries; older ones are read from the database, so "
      "memory stays flat however long the server runs")(
      "archive-connections",
      po::value(&cfg.archive_connections)->default_value(cfg.archive_connections),
      ("threads, each with one PostgreSQL connection, that read queried orders no longer in "
       "memory (one statement per request, off the threads serving clients); up to " +
       std::to_string(store::OrderArchive::kWaitingPerConnection) +
       " requests per connection wait for them, and further ones get 'Server busy' for those "
       "queries")
          .c_str());
  // Not in --help: tests hold the projection back to exercise the journal replay.
  po::options_description hidden;
  hidden.add_options()("projector-delay-ms", po::value(&cfg.projector_delay_ms));
  po::options_description all;
  all.add(opts).add(hidden);
  if (auto status = cli::parse_serving_flags(argc, argv, opts, all, cfg.serving)) {
    exit_code = *status;
    return false;
  }
  const auto& pl = cfg.parse_limits;
  const auto& l = cfg.limits;
  if (cfg.max_connections < 1 || cfg.read_timeout_ms < 1 || cfg.max_request_bytes < 1 ||
      cfg.archive_connections < 1 || pl.max_children < 1 || pl.max_id_length < 1 ||
      pl.max_symbol_length < 1 || pl.max_attributes < 3 || l.max_accounts < 1 ||
      l.max_symbols < 1 || l.max_open_orders < 1 || l.max_open_orders_per_account < 1 ||
      l.max_executions_per_request < 1 || l.max_reply_ratio < 1 ||
      l.max_reply_bytes < app::Limits::kReplyAllowance ||
      cfg.handler_limits.heavy.heavy_bytes < 1 || cfg.handler_limits.heavy.in_flight_bytes < 1 ||
      cfg.handler_limits.heavy.queued_bytes < 1 || cfg.heavy_wait_ms < 1 ||
      cfg.max_projection_rows < 1 || cfg.heavy_pause_projection_rows < 1 ||
      cfg.heavy_pause_projection_rows >= cfg.max_projection_rows) {
    EXCHANGE_LOG(error) << "every --max-... limit must be at least 1 (--max-attributes at least "
                           "3, --max-reply-bytes at least "
                        << app::Limits::kReplyAllowance
                        << "), and --read-timeout-ms, --archive-connections and the "
                           "--...heavy... flags too; --heavy-pause-projection-rows must be below "
                           "--max-projection-rows";
    exit_code = 2;
    return false;
  }
  if (cfg.max_buffered_bytes < cfg.max_request_bytes) {
    EXCHANGE_LOG(error) << "--max-buffered-bytes must be at least --max-request-bytes (else "
                           "the largest request allowed could never be received)";
    exit_code = 2;
    return false;
  }
  if (cfg.admin_port > 65535) {
    EXCHANGE_LOG(error) << "--admin-port must be at most 65535";
    exit_code = 2;
    return false;
  }
  if (cfg.admin_max_connections < 1 || cfg.admin_timeout_ms < 1) {
    EXCHANGE_LOG(error) << "--admin-max-connections and --admin-timeout-ms must be at least 1";
    exit_code = 2;
    return false;
  }
  if (cfg.journal_keep < 0) {
    EXCHANGE_LOG(error) << "--journal-keep must be 0 (keep everything) or more";
    exit_code = 2;
    return false;
  }
  if (cfg.ready_max_lag_ms < 1) {
    EXCHANGE_LOG(error) << "--ready-max-lag-ms must be at least 1";
    exit_code = 2;
    return false;
  }
  if (cfg.projection_gather_ms >= cfg.ready_max_lag_ms) {
    EXCHANGE_LOG(error) << "--projection-gather-ms must be below --ready-max-lag-ms (else a "
                           "server under load would report itself not ready)";
    exit_code = 2;
    return false;
  }
  if (cfg.standby && cfg.reset) {
    EXCHANGE_LOG(error) << "--standby and --reset do not go together: a standby changes "
                           "nothing in the database until it has taken over";
    exit_code = 2;
    return false;
  }
  if (cfg.standby_poll_ms < 1 || cfg.standby_poll_ms > 10000) {
    EXCHANGE_LOG(error) << "--standby-poll-ms must be between 1 and 10000";
    exit_code = 2;
    return false;
  }
  if (cfg.lease_ms < 100) {
    EXCHANGE_LOG(error) << "--lease-ms must be at least 100";
    exit_code = 2;
    return false;
  }
  if (cfg.db_timeout_ms < 100) {
    EXCHANGE_LOG(error) << "--db-timeout-ms must be at least 100";
    exit_code = 2;
    return false;
  }
  return true;
}

// What exchange-server serves: the durable engine (app::DurableEngine: the engine under its lock,
// the group commit, the projection, the archive of closed orders) loaded from the database, or
// taken over from the standby it was, and the request handler in front of it.
class TradingService final : public cli::Service {
 public:
  // What it is built from, at start-up or at a standby's takeover.
  struct Context {
    const cli::ServeOptions& options;
    app::Shutdown& shutdown;
    app::Metrics& metrics;
    std::int64_t writer_epoch;
    std::function<bool()> lease_valid;
  };

  // Start-up: loads the state from the database.
  TradingService(const Config& cfg, const cli::Startup& start)
      : TradingService(cfg, Context{start.options, start.shutdown, start.metrics,
                                    start.writer_epoch, start.lease_valid}) {
    engine_.load(start.db);
    report(start.options);
  }
  // A standby's takeover: the state it kept up to date.
  TradingService(const Config& cfg, const Context& context, app::Followed&& state)
      : TradingService(cfg, context) {
    engine_.adopt(std::move(state));
    report(context.options);
  }

  // Before what the metrics read goes away.
  ~TradingService() override {
    metrics_.set_state(nullptr);
    metrics_.set_db_counters(nullptr);
  }

  serving::Handler& handler() override { return handler_; }
  void fence(const std::string& why) override { engine_.fence(why); }
  void start() override { engine_.start(); }
  void abandon() override { engine_.abandon(); }
  // What the projector has not written yet is in the journal: the next start replays it. A
  // forced shutdown (the database silent) does not wait for it at all.
  void stop(bool forced) override { engine_.stop(forced); }
  app::Health::Status health(bool stopping) override {
    return health_.status(engine_.available(), stopping, engine_.backlog());
  }
  std::string loaded() override {
    return std::to_string(engine_.order_count()) + " orders loaded, next order id " +
           std::to_string(engine_.next_order_id());
  }
  std::string summary() override { return engine_.summary(); }

 private:
  TradingService(const Config& cfg, const Context& context)
      : metrics_(context.metrics),
        health_(context.options.serving.db, context.options.db_timeout,
                std::chrono::milliseconds(cfg.ready_max_lag_ms)),
        engine_(engine_options(cfg, context), context.metrics, context.shutdown.stop_flag(),
                [this] { health_.database_answered(); }),
        handler_(engine_, context.metrics, cfg.handler_limits,
                 context.options.serving.loaded.gate) {}

  // Once the state is in: the metrics and the health check.
  void report(const cli::ServeOptions& options) {
    metrics_.set_db_counters([this] {
      const auto archive = engine_.archive_counts();
      app::Metrics::DbCounters db;
      db.timeouts = static_cast<long>(store::Watchdog::shared().timeouts());
      db.reconnects = static_cast<long>(engine_.write_reconnects());
      db.archive_statements = static_cast<long>(archive.statements);
      db.archive_orders = static_cast<long>(archive.orders);
      db.archive_refused = static_cast<long>(archive.refused);
      db.archive_waiting = static_cast<long>(archive.waiting);
      db.archive_connections = static_cast<long>(archive.connected);
      return db;
    });
    metrics_.set_state([this] {
      auto gauges = engine_.state();
      handler_.fill(gauges);
      gauges.role = 1;
      return gauges;
    });
    // /healthz asks the pinger how recently PostgreSQL answered: only with an admin port.
    if (options.admin.port != 0) health_.start();
  }

  static app::DurableEngineOptions engine_options(const Config& cfg, const Context& context) {
    app::DurableEngineOptions o;
    o.writer_epoch = context.writer_epoch;
    o.conninfo = context.options.serving.db;
    o.db_timeout = context.options.db_timeout;
    o.commit_gather = cli::commit_gather(context.options.serving);
    o.closed_orders_cached = cfg.closed_orders_cached;
    o.archive_connections = cfg.archive_connections;
    o.journal_keep = cfg.journal_keep;
    o.limits = cfg.limits;
    o.projection_gather = std::chrono::milliseconds(cfg.projection_gather_ms);
    o.projector_delay = std::chrono::milliseconds(cfg.projector_delay_ms);
    o.max_projection_rows = cfg.max_projection_rows;
    o.heavy_pause_projection_rows = cfg.heavy_pause_projection_rows;
    o.on_fenced = [&shutdown = context.shutdown] { shutdown.step_down(); };
    o.lease_valid = context.lease_valid;
    return o;
  }

  app::Metrics& metrics_;
  app::Health health_;
  app::DurableEngine engine_;
  app::RequestHandler handler_;
};

// exchange-server --standby: the engine kept up to date from the active server's journal
// (app::Standby), which becomes a TradingService at the takeover.
class StandbyFollower final : public cli::Follower {
 public:
  StandbyFollower(const Config& cfg, const cli::FollowerStartup& start)
      : cfg_(cfg),
        options_(start.options),
        shutdown_(start.shutdown),
        metrics_(start.metrics),
        standby_(standby_options(cfg, start.options), start.shutdown.stop_flag()) {
    metrics_.set_state([this] {
      const auto lag = standby_.lag();
      app::Metrics::StateGauges gauges;
      gauges.role = 0;
      gauges.available = 0;
      gauges.orders_resting = lag.orders_resting;
      gauges.journal_seq = static_cast<long>(lag.applied_seq);
      gauges.standby_lag_entries = static_cast<long>(lag.entries);
      gauges.standby_lag_ms = static_cast<long>(lag.behind.count());
      return gauges;
    });
  }
  ~StandbyFollower() override {
    if (!handed_over_) metrics_.set_state(nullptr);
  }

  bool load() override { return standby_.load(); }
  void start() override { standby_.start(); }
  void stop() override { standby_.stop(); }
  std::unique_ptr<cli::Service> take_over(std::int64_t epoch,
                                          std::function<bool()> lease_valid) override {
    app::Followed state = standby_.take_over();
    // The state has left the standby: there is no trying again from here.
    metrics_.set_state(nullptr);
    handed_over_ = true;
    try {
      return std::make_unique<TradingService>(
          cfg_,
          TradingService::Context{options_, shutdown_, metrics_, epoch, std::move(lease_valid)},
          std::move(state));
    } catch (const std::exception& e) {
      EXCHANGE_LOG(error) << "takeover: starting the active server failed: " << e.what()
                          << "; stepping down";
      shutdown_.step_down();
      throw;
    }
  }
  app::Health::Status health() override {
    const auto lag = standby_.lag();
    return {false, "standby: following the active server's journal, applied through seq " +
                       std::to_string(lag.applied_seq) + ", " + std::to_string(lag.entries) +
                       " entries and " + std::to_string(lag.behind.count()) + " ms behind"};
  }
  std::string loaded() override {
    const auto lag = standby_.lag();
    return "standby, following the journal from seq " + std::to_string(lag.applied_seq) + ", " +
           std::to_string(lag.orders_resting) + " orders resting";
  }
  std::string summary() override {
    const auto lag = standby_.lag();
    return "standing by (never took over): " + std::to_string(lag.applied) +
           " journal entries replayed, " + std::to_string(lag.reloads) + " loads of the projection";
  }

 private:
  static app::StandbyOptions standby_options(const Config& cfg, const cli::ServeOptions& options) {
    app::StandbyOptions o;
    o.conninfo = options.serving.db;
    o.db_timeout = options.db_timeout;
    o.closed_orders_cached = cfg.closed_orders_cached;
    o.poll_every = std::chrono::milliseconds(cfg.standby_poll_ms);
    return o;
  }

  const Config& cfg_;
  const cli::ServeOptions& options_;
  app::Shutdown& shutdown_;
  app::Metrics& metrics_;
  app::Standby standby_;
  bool handed_over_ = false;
};

cli::ServeOptions serve_options(const Config& cfg) {
  cli::ServeOptions o;
  o.serving = cfg.serving;
  o.program = "exchange-server";
  o.schema_path = cfg.schema_path;
  o.reset = cfg.reset;
  o.reset_note = "database reset";
  o.db_wait_seconds = cfg.db_wait_seconds;
  o.db_timeout = std::chrono::milliseconds(cfg.db_timeout_ms);
  o.writer_lock_wait = std::chrono::milliseconds(cfg.writer_lock_wait_ms);
  o.lease = std::chrono::milliseconds(cfg.lease_ms);
  o.standby = cfg.standby;
  o.shutdown_grace = std::chrono::milliseconds(cfg.shutdown_grace_ms);
  o.limits.max_request_bytes = cfg.max_request_bytes;
  o.limits.read_timeout = std::chrono::milliseconds(cfg.read_timeout_ms);
  o.limits.max_connections = cfg.max_connections;
  o.limits.reply_bound = cfg.limits.reply_bound();
  o.max_buffered_bytes = cfg.max_buffered_bytes;
  o.simulated_io_ms_per_child = cfg.simulated_io_ms_per_child;
  o.metrics_path = cfg.metrics_path;
  o.admin.port = cfg.admin_port;
  o.admin.bind = cfg.admin_bind;
  o.admin.limits = {cfg.admin_max_connections, std::chrono::milliseconds(cfg.admin_timeout_ms)};
  // The admin port's connections (counted even without one) and the archive's.
  o.extra_descriptors = cfg.admin_max_connections + cfg.archive_connections;
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  int exit_code = 0;
  if (!parse_flags(argc, argv, cfg, exit_code)) return exit_code;
  cfg.handler_limits.parse = cfg.parse_limits;
  cfg.handler_limits.heavy.max_wait = std::chrono::milliseconds(cfg.heavy_wait_ms);
  return cli::serve(
      serve_options(cfg),
      [&cfg](const cli::Startup& start) { return std::make_unique<TradingService>(cfg, start); },
      [&cfg](const cli::FollowerStartup& start) {
        return std::make_unique<StandbyFollower>(cfg, start);
      });
}
