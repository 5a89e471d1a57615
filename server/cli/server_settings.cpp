#include "cli/server_settings.hpp"

#include "app/settings.hpp"
#include "cli/settings_parser.hpp"
#include "net/settings.hpp"
#include "util/log.hpp"

namespace cli {

namespace {

const char* const kCaption = "exchange-server: the order-matching exchange (XML over TCP)";

void declare_database(util::Settings& s, ServeOptions& o) {
  const std::string group = "Database";
  s.add("db-wait", group, &o.db_wait_seconds)
      .at_least(0)
      .unit("s")
      .help("seconds to keep retrying at start-up while PostgreSQL is unreachable");
  s.add("db-timeout-ms", group, &o.db_timeout)
      .at_least(100)
      .unit("ms")
      .help(
          "longest wait for PostgreSQL: a commit or read without an answer this long closes "
          "its connection (the commit's outcome is then read from a fresh one) and the server "
          "reconnects; also sets libpq's connect_timeout, keepalives and tcp_user_timeout "
          "unless --db sets them (loading the whole state may take ten times as long)");
  s.add("writer-lock-wait-ms", group, &o.writer_lock_wait)
      .unit("ms")
      .help(
          "one server writes a database: at start-up, how long to wait for its writer lock "
          "while another session holds it (a previous server may still be exiting); then exit "
          "1 naming the holder");
  s.add("reset", group, &o.reset)
      .help("delete every account, symbol, order and execution before serving");
  s.add("schema", group, &o.schema_path)
      .no_default()
      .help("apply this schema file instead of the built-in copy of schema.sql");
}

void declare_high_availability(util::Settings& s, ServeOptions& o) {
  const std::string group = "High availability";
  s.add("standby", group, &o.standby)
      .help(
          "run as the hot standby of the server that holds the database's writer lock: load "
          "the state, follow its journal (milliseconds behind), answer every request with a "
          "'this is the standby' error and /healthz with 503, and take over by itself when "
          "that server's database session ends (it died) or its lease runs out (it is paused "
          "or cut off)");
  s.add("lease-ms", group, &o.lease)
      .at_least(100)
      .unit("ms")
      .help(
          "the writer's lease: the server holding the writer lock renews it every third of "
          "this; one that could not renew it for this long answers every request "
          "'unavailable', and a standby ends its lock session once it has expired and takes "
          "over");
}

void declare_operations(util::Settings& s, ServerSettings& o) {
  const std::string group = "Operations";
  s.add("admin-port", group, &o.serve.admin.port)
      .no_default()
      .at_most(65535)
      .help(
          "serve HTTP on this port for operators: GET /metrics (Prometheus text format) and "
          "GET /healthz (200 'ok', or 503 and why); off unless given");
  s.add("admin-bind", group, &o.serve.admin.bind)
      .help(
          "address of the admin port (it has no authentication: keep it local unless a "
          "firewall guards it)");
  net::declare_settings(s, o.serve.admin.limits);
  s.add("ready-max-lag-ms", group, &o.ready_max_lag)
      .at_least(1)
      .unit("ms")
      .help(
          "/healthz answers 503 (not ready, and why) while the oldest journal entry not yet in "
          "the SQL tables, or the batch the group commit is at, is older than this; 200 again "
          "once caught up");
  s.add("shutdown-grace-ms", group, &o.serve.shutdown_grace)
      .unit("ms")
      .help(
          "after SIGINT/SIGTERM, how long in-flight requests may take to commit; then the rest "
          "get an error. Exit status: 0 if everything drained, 3 if requests had to be failed, "
          "4 if it stepped down because another server took over the database, 1 on a fatal "
          "error (also when another server holds the database's writer lock at start-up), 2 "
          "on bad flags");
  s.add("metrics", group, &o.serve.metrics_path)
      .no_default()
      .help(
          "write one CSV row per second to this file: time, arrivals, completions, mean and "
          "p99 service ms, threads, busy threads, queue length, open connections, RSS KiB, "
          "pool target, database timeouts and reconnects, projection lag (journal entries not "
          "yet in the tables)");
  s.add("simulated-io-ms-per-child", "Benchmarking", &o.serve.simulated_io_ms_per_child)
      .unit("ms")
      .help(
          "benchmarking aid: each child of a request sleeps this many ms in the thread running "
          "the handler (outside every lock), as if it did blocking I/O; 0 in production");
}

void declare(util::Settings& s, ServerSettings& o) {
  declare_serving_settings(
      s, o.serve.serving,
      "IPv4 address to listen on; 0.0.0.0 serves every interface (only with --principals, or "
      "--allow-unauthenticated)",
      "PostgreSQL connection string or URI (default: $DATABASE_URL); for high availability "
      "list every node and ask for the writable one: "
      "postgresql://u@host1:5432,host2:5432/db?target_session_attrs=read-write");
  net::declare_settings(s, o.serve.limits);
  s.add("max-buffered-bytes", "Connections", &o.serve.max_buffered_bytes)
      .unit("bytes")
      .help(
          "bytes all client connections together may buffer (requests being received or run, "
          "replies not yet written); beyond it a connection whose request needs more gets "
          "'Server busy' and is closed, and connections with replies unwritten wait for their "
          "readers; at least --max-request-bytes");
  app::declare_settings(s, o.handler);
  app::declare_settings(s, o.engine);
  declare_database(s, o.serve);
  declare_high_availability(s, o.serve);
  app::declare_settings(s, o.standby);
  declare_operations(s, o);
}

// What one setting's range cannot say: settings checked against each other.
std::optional<std::string> check_together(const ServerSettings& o) {
  if (o.serve.max_buffered_bytes < o.serve.limits.max_request_bytes)
    return "--max-buffered-bytes must be at least --max-request-bytes (else the largest request "
           "allowed could never be received)";
  if (o.engine.heavy_pause_projection_rows >= o.engine.max_projection_rows)
    return "--heavy-pause-projection-rows must be below --max-projection-rows";
  if (o.engine.projection_gather >= o.ready_max_lag)
    return "--projection-gather-ms must be below --ready-max-lag-ms (else a server under load "
           "would report itself not ready)";
  if (o.serve.standby && o.serve.reset)
    return "--standby and --reset do not go together: a standby changes nothing in the "
           "database until it has taken over";
  return std::nullopt;
}

// What follows from the settings: one flag, several consumers.
void derive(ServerSettings& o) {
  o.serve.program = "exchange-server";
  o.serve.reset_note = "database reset";
  o.serve.limits.reply_bound = o.engine.limits.reply_bound();
  o.standby.closed_orders_cached = o.engine.closed_orders_cached;
  // The admin port's connections (counted even without one) and the archive's.
  o.serve.extra_descriptors = o.serve.admin.limits.max_connections + o.engine.archive_connections;
}

}  // namespace

std::optional<int> parse_server_settings(int argc, char** argv, ServerSettings& out) {
  util::Settings settings;
  declare(settings, out);
  if (auto status = parse_settings(argc, argv, settings, kCaption)) return status;
  if (auto problem = check_together(out)) {
    EXCHANGE_LOG(error) << *problem;
    return 2;
  }
  if (auto status = finish_serving_flags(out.serve.serving)) return status;
  derive(out);
  return std::nullopt;
}

}  // namespace cli
