// exchange-floor: the durable floor. What one durable request/reply costs on this machine when
// nothing else is done: it listens with exchange-server's framing and connection handling
// (net::Listener, net::Session and its drivers, run by the same concurrency model), appends
// every request to the journal with the server's group commit (store::Batcher and
// store::BatchWriter: one statement, one transaction per batch, synchronous_commit as the
// database sets it, the next batch filling while one commits) and replies only once the row
// is committed. No XML parsing, no matching, no projection. The server's throughput divided
// by the floor's, measured in the same run (scripts/benchmark.py), is how close the exchange
// comes to the cost of durability alone.
//
// It writes the server's `journal` and `commit_marker` tables (the same schema, the same
// statement), so it needs a database of its own: it refuses one that holds an exchange's
// state. Flags: --port, --bind, --db (or $DATABASE_URL), --concurrency, --threads,
// --reset, --log-level, --help. SIGINT/SIGTERM: stop accepting, let in-flight requests commit
// (10 s), exit 0 (3 if some had to be failed).
#include <sys/resource.h>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include <boost/program_options.hpp>
#include <pqxx/pqxx>

#include "app/shutdown.hpp"
#include "concurrency/model.hpp"
#include "floor/floor_handler.hpp"
#include "net/listener.hpp"
#include "schema_sql.hpp"
#include "store/batch_writer.hpp"
#include "store/batcher.hpp"
#include "store/connection_bounds.hpp"
#include "store/database.hpp"
#include "store/watchdog.hpp"
#include "util/log.hpp"

namespace po = boost::program_options;

namespace {

struct Config {
  std::string bind = "127.0.0.1";
  unsigned port = 12346;
  std::string db;
  std::string model = "reactor";
  unsigned threads = 4;
  unsigned min_threads = 4;
  unsigned max_threads = 1024;
  std::string log_level = "info";
  bool reset = false;
};

std::string models_help() {
  std::string out = "concurrency model, as exchange-server's:";
  for (const auto& m : concurrency::all_models()) out += "\n  " + m.name + ": " + m.description;
  return out;
}

// Returns false (after printing) when the process should exit with `exit_code`.
bool parse_flags(int argc, char** argv, Config& cfg, int& exit_code) {
  po::options_description opts(
      "exchange-floor: the durable floor. Serves exchange-server's framing (one-shot and "
      "persistent sessions) with its concurrency models, journals every request as one row with "
      "the server's group commit, and replies only after the commit; no XML parsing, no "
      "matching. Its throughput is the ceiling for exchange-server on the same machine");
  opts.add_options()("help,h", "show this help and exit")(
      "port", po::value(&cfg.port)->default_value(cfg.port), "TCP port to listen on")(
      "bind", po::value(&cfg.bind)->default_value(cfg.bind),
      "IPv4 address to listen on (local by default: it journals whatever it is sent)")(
      "db", po::value(&cfg.db),
      "PostgreSQL connection string or URI (default: $DATABASE_URL); a database of its own, "
      "not an exchange's: it writes the journal and commit_marker tables")(
      "concurrency", po::value(&cfg.model)->default_value(cfg.model), models_help().c_str())(
      "threads", po::value(&cfg.threads)->default_value(cfg.threads),
      "worker threads of the fixed pool (--concurrency pool)")(
      "min-threads", po::value(&cfg.min_threads)->default_value(cfg.min_threads),
      "fewest threads of the self-sizing pools (fotp, adaptive)")(
      "max-threads", po::value(&cfg.max_threads)->default_value(cfg.max_threads),
      "most threads of the self-sizing pools (fotp, adaptive)")(
      "reset", po::bool_switch(&cfg.reset), "empty the journal before serving")(
      "log-level", po::value(&cfg.log_level)->default_value(cfg.log_level),
      "error | warn | info | debug");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, opts), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    EXCHANGE_LOG(error) << e.what() << " (try --help)";
    exit_code = 2;
    return false;
  }
  if (vm.count("help")) {
    std::cout << opts << "\n";
    exit_code = 0;
    return false;
  }
  if (cfg.db.empty()) {
    const char* env = std::getenv("DATABASE_URL");
    if (env) cfg.db = env;
  }
  util::LogLevel level;
  std::string problem;
  if (cfg.db.empty())
    problem = "no database: pass --db or set DATABASE_URL";
  else if (!concurrency::find_model(cfg.model))
    problem = "unknown --concurrency '" + cfg.model + "'\n" + models_help();
  else if (cfg.port > 65535)
    problem = "--port must be at most 65535";
  else if (!util::parse_log_level(cfg.log_level, level))
    problem = "--log-level must be error, warn, info or debug";
  else if (cfg.max_threads < 1 || cfg.min_threads > cfg.max_threads)
    problem = "need 1 <= --max-threads and --min-threads <= --max-threads";
  if (!problem.empty()) {
    EXCHANGE_LOG(error) << problem;
    exit_code = 2;
    return false;
  }
  util::set_log_level(level);
  return true;
}

// As exchange-server does: each connection holds a descriptor, and the soft limit (often 1024)
// would turn connections away at accept long before --max-connections' "Server busy".
void raise_descriptor_limit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
}

// The floor writes the exchange's journal table: pointed at an exchange's database it would
// interleave its rows with the server's (and --reset would empty the server's journal). An
// exchange's database has accounts, or journal rows with an order id (the floor's have 0).
void refuse_exchange_database(const std::string& conninfo) {
  pqxx::connection conn(conninfo);
  pqxx::read_transaction tx(conn);
  const bool exchange = tx.exec1(
                              "SELECT EXISTS (SELECT 1 FROM accounts) OR "
                              "EXISTS (SELECT 1 FROM journal WHERE first_order_id <> 0)")[0]
                            .as<bool>();
  if (exchange)
    throw std::runtime_error(
        "this database holds an exchange's state (accounts, or journal rows written by "
        "exchange-server); give the floor a database of its own, e.g. CREATE DATABASE "
        "exchange_floor");
}

}  // namespace

int main(int argc, char** argv) {
  util::set_log_program("exchange-floor");
  Config cfg;
  int exit_code = 0;
  if (!parse_flags(argc, argv, cfg, exit_code)) return exit_code;
  raise_descriptor_limit();
  // A peer that closes while we write is an error on that connection, never a signal.
  std::signal(SIGPIPE, SIG_IGN);
  // Before any thread starts: SIGINT/SIGTERM are taken by the shutdown thread alone.
  app::Shutdown shutdown{std::chrono::milliseconds(10000)};
  // The server's bounds on every wait for PostgreSQL, so a commit costs the same here.
  const auto db_timeout = store::kDefaultDbTimeout;
  cfg.db = store::with_connection_bounds(cfg.db, store::bounds_for_timeout(db_timeout));

  try {
    std::int64_t last_seq = 0;
    {
      auto setup = store::connect_with_retry(cfg.db, 30, &shutdown.stop_flag(), db_timeout);
      // The server's own schema: the journal and commit_marker the group commit writes.
      setup->apply_schema(kSchemaSql);
      refuse_exchange_database(cfg.db);
      if (cfg.reset) {
        setup->reset();
        EXCHANGE_LOG(info) << "journal emptied (--reset)";
      }
      // Seqs continue after the stored ones: they are the journal's primary key.
      last_seq = setup->last_journal_seq();
    }

    // Exactly the server's write path: the same writer (broken connections resolved through
    // commit_marker) behind the same group commit.
    store::BatchWriter writer(cfg.db, db_timeout, db_timeout);
    store::Batcher* batcher_ptr = nullptr;
    store::Batcher batcher(
        [&writer](const store::Batch& batch, store::Ticket t) { writer.write(batch, t); },
        // A failed batch fails with the one filling behind it, as in the
        // server; there is no engine to rebuild, so that is all.
        [&batcher_ptr](store::Ticket failed, store::Outcome outcome) {
          for (auto& answer : batcher_ptr->fail_open_batch(failed, outcome)) answer();
        });
    batcher_ptr = &batcher;
    batcher.set_next_seq(last_seq + 1);
    floor_server::FloorHandler handler(batcher);

    net::Listener listener(cfg.bind, static_cast<std::uint16_t>(cfg.port));
    concurrency::ModelOptions options;
    options.threads = cfg.threads;
    options.min_threads = cfg.min_threads;
    options.max_threads = cfg.max_threads;
    // options.limits: the server's defaults (request size, read timeout, connections).
    auto model = concurrency::find_model(cfg.model)->make(options);

    batcher.start();
    shutdown.set_actions([&] { model->stop(); },
                         [&] {
                           // Grace over: nothing more is written, waiting calls return now.
                           writer.abandon();
                           store::Watchdog::shared().fire_all();
                         });
    struct ActionsEnd {
      app::Shutdown& s;
      ~ActionsEnd() { s.finished(); }
    } actions_end{shutdown};
    EXCHANGE_LOG(info) << "serving on " << cfg.bind << ":" << listener.port() << " with model "
                       << cfg.model << " (journal continues after seq " << last_seq << ")";
    if (!shutdown.stop_flag().requested()) model->run(listener, handler);
    batcher.stop();
    shutdown.finished();
    options.metrics->stop();
    auto stats = batcher.stats();
    EXCHANGE_LOG(info) << "stopped after " << stats.requests << " requests in " << stats.batches
                       << " commits (mean "
                       << (stats.batches ? stats.requests / double(stats.batches) : 0.0)
                       << " requests and "
                       << (stats.batches ? stats.write_microseconds / 1000.0 / stats.batches : 0.0)
                       << " ms per commit)";
  } catch (const std::exception& e) {
    if (shutdown.stop_flag().requested()) {
      EXCHANGE_LOG(warn) << "stopped before serving: " << e.what();
      return 0;
    }
    EXCHANGE_LOG(error) << e.what();
    return 1;
  }
  if (shutdown.forced()) {
    EXCHANGE_LOG(warn) << "exiting " << app::Shutdown::kNotDrained
                       << ": requests still waiting after the grace period were failed";
    return app::Shutdown::kNotDrained;
  }
  return 0;
}
