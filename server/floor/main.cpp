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
// state. Like the server it takes the database's writer lock and epoch (store/writer_lock.hpp),
// so its appends carry the same fence and a second floor on its database is refused. Flags:
// --port, --bind, --db (or $DATABASE_URL), --concurrency, --threads, --reset, --log-level,
// --help. SIGINT/SIGTERM: stop accepting, let in-flight requests commit (10 s), exit 0 (3 if
// some had to be failed; 4 if another process took its database over, 1 if one held it).
#include <atomic>
#include <csignal>
#include <memory>
#include <string>

#include <boost/program_options.hpp>
#include <pqxx/pqxx>

#include "app/metrics.hpp"
#include "app/shutdown.hpp"
#include "cli/serving_flags.hpp"
#include "concurrency/model.hpp"
#include "floor/floor_handler.hpp"
#include "net/buffer_budget.hpp"
#include "net/listener.hpp"
#include "schema_sql.hpp"
#include "store/batch_writer.hpp"
#include "store/batcher.hpp"
#include "store/connection_bounds.hpp"
#include "store/database.hpp"
#include "store/watchdog.hpp"
#include "store/writer_lock.hpp"
#include "util/log.hpp"

namespace po = boost::program_options;

namespace {

struct Config {
  cli::ServingFlags serving;
  bool reset = false;

  Config() {
    // Local by default, on the port beside the server's, in the benchmark's model.
    serving.bind = "127.0.0.1";
    serving.port = 12346;
    serving.model = "reactor";
  }
};

// Returns false (after printing) when the process should exit with `exit_code`.
bool parse_flags(int argc, char** argv, Config& cfg, int& exit_code) {
  po::options_description opts(
      "exchange-floor: the durable floor. Serves exchange-server's framing (one-shot and "
      "persistent sessions) with its concurrency models, journals every request as one row with "
      "the server's group commit, and replies only after the commit; no XML parsing, no "
      "matching. Its throughput is the ceiling for exchange-server on the same machine");
  cli::add_serving_flags(
      opts, cfg.serving,
      "IPv4 address to listen on (local by default: it journals whatever it is sent)",
      "PostgreSQL connection string or URI (default: $DATABASE_URL); a database of its own, not "
      "an exchange's: it writes the journal and commit_marker tables");
  opts.add_options()("reset", po::bool_switch(&cfg.reset), "empty the journal before serving");
  if (auto status = cli::parse_serving_flags(argc, argv, opts, opts, cfg.serving)) {
    exit_code = *status;
    return false;
  }
  return true;
}

// The floor writes the exchange's journal table: pointed at an exchange's database it would
// interleave its rows with the server's (and --reset would empty the server's journal). An
// exchange's database has accounts, or journal rows with an order id (the floor's have 0).
// Two floors on one database are kept apart like two servers: the writer lock.
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
  // The server's default --max-connections (4096), plus threads and database connections.
  cli::raise_descriptor_limit(4096 + cfg.serving.max_threads + 64);
  // A peer that closes while we write is an error on that connection, never a signal.
  std::signal(SIGPIPE, SIG_IGN);
  // Before any thread starts: SIGINT/SIGTERM are taken by the shutdown thread alone.
  app::Shutdown shutdown{std::chrono::milliseconds(10000)};
  // The server's bounds on every wait for PostgreSQL, so a commit costs the same here.
  const auto db_timeout = store::kDefaultDbTimeout;
  cfg.serving.db =
      store::with_connection_bounds(cfg.serving.db, store::bounds_for_timeout(db_timeout));

  try {
    std::int64_t last_seq = 0;
    auto setup = store::connect_with_retry(cfg.serving.db, 30, &shutdown.stop_flag(), db_timeout);
    // The server's rule and its default wait: one writer per database.
    store::WriterLock writer_lock(
        {cfg.serving.db, "exchange-floor", std::chrono::seconds(5), db_timeout},
        &shutdown.stop_flag());
    std::int64_t epoch = 0;
    {
      // The server's own schema: the journal and commit_marker the group commit writes.
      setup->apply_schema(kSchemaSql);
      refuse_exchange_database(cfg.serving.db);
      epoch = writer_lock.begin_epoch();
      if (cfg.reset) {
        setup->reset();
        EXCHANGE_LOG(info) << "journal emptied (--reset)";
      }
      // Seqs continue after the stored ones: they are the journal's primary key.
      last_seq = setup->last_journal_seq();
      setup.reset();
    }

    // Exactly the server's write path: the same writer (broken connections resolved through
    // commit_marker) behind the same group commit.
    store::BatchWriter writer(cfg.serving.db, epoch, db_timeout, db_timeout);
    // Said once, whoever finds out first (a fenced append, or the lock's keeper).
    std::atomic<bool> fenced{false};
    auto step_down = [&](const std::string& why) {
      if (fenced.exchange(true)) return;
      EXCHANGE_LOG(error) << "fenced: " << why << "; stepping down";
      writer.fence(why);
      shutdown.step_down();
    };
    store::Batcher batcher(
        [&writer](const store::Batch& batch, store::Ticket t) { writer.write(batch, t); },
        // A failed batch fails with the one filling behind it, as in the server; there is no
        // engine to rebuild, so that is all.
        [&](store::Batcher& failing, store::Ticket failed, store::Outcome outcome) {
          if (outcome == store::Outcome::Fenced) step_down(failing.fenced_why());
          for (auto& answer : failing.fail_open_batch(failed, outcome)) answer();
        });
    batcher.set_next_seq(last_seq + 1);
    floor_server::FloorHandler handler(batcher);
    app::Metrics metrics;  // counted by the model, read by no one: as in the server

    net::Listener listener(cfg.serving.bind, static_cast<std::uint16_t>(cfg.serving.port));
    concurrency::ModelOptions options = cli::model_options(cfg.serving);
    // options.limits: the server's defaults (request size, read timeout, connections, and the
    // buffer budget, as exchange-server's --max-buffered-bytes default).
    options.limits.budget = std::make_shared<net::BufferBudget>(net::kDefaultMaxBufferedBytes);
    auto model = concurrency::find_model(cfg.serving.model)->make(options);

    batcher.start();
    writer_lock.keep(step_down);
    // The keeper uses what is declared above: it ends before that is destroyed.
    struct StopKeeper {
      store::WriterLock& lock;
      ~StopKeeper() { lock.stop_keeping(); }
    } stop_keeper{writer_lock};
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
    EXCHANGE_LOG(info) << "serving on " << cfg.serving.bind << ":" << listener.port()
                       << " with model " << cfg.serving.model << " (journal continues after seq "
                       << last_seq << ")";
    if (!shutdown.stop_flag().requested()) model->run(listener, handler, metrics);
    batcher.stop();
    shutdown.finished();
    metrics.stop();
    EXCHANGE_LOG(info) << "stopped after " << store::Batcher::describe(batcher.stats());
  } catch (const std::exception& e) {
    return cli::fatal_status(shutdown, e);
  }
  return cli::exit_status(shutdown);
}
