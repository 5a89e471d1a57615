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
// It writes the server's `journal` table (the same schema, the same statement), so it needs a
// database of its own: it refuses one that holds an exchange's state. Like the server it takes
// the database's writer lock and epoch (leadership/writer_lock.hpp), so its appends carry the same
// fence and a second floor on its database is refused. Flags: --port, --bind, --db (or
// $DATABASE_URL), --concurrency, --threads, --reset, --log-level, --help. SIGINT/SIGTERM: stop
// accepting, let in-flight requests commit (10 s), exit 0 (3 if some had to be failed; 4 if
// another process took its database over, 1 if one held it).
//
// The process is the server's own (cli::serve, cli/serve.hpp): the floor differs only in what
// it serves (FloorService below) and in its flags.
#include <atomic>
#include <memory>
#include <string>

#include <pqxx/pqxx>

#include "app/health.hpp"
#include "cli/serve.hpp"
#include "cli/serving_flags.hpp"
#include "cli/settings_parser.hpp"
#include "floor/floor_handler.hpp"
#include "lifecycle/shutdown.hpp"
#include "store/batch_writer.hpp"
#include "store/batcher.hpp"
#include "store/watchdog.hpp"
#include "util/log.hpp"

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
  util::Settings settings;
  cli::declare_serving_settings(
      settings, cfg.serving,
      "IPv4 address to listen on (local by default: it journals whatever it is sent)",
      "PostgreSQL connection string or URI (default: $DATABASE_URL); a database of its own, not "
      "an exchange's: it writes the journal table");
  settings.add("reset", "Serving", &cfg.reset).help("empty the journal before serving");
  auto status = cli::parse_settings(
      argc, argv, settings,
      "exchange-floor: the durable floor. Serves exchange-server's framing (one-shot and "
      "persistent sessions) with its concurrency models, journals every request as one row with "
      "the server's group commit, and replies only after the commit; no XML parsing, no "
      "matching. Its throughput is the ceiling for exchange-server on the same machine");
  if (!status) status = cli::finish_serving_flags(cfg.serving);
  if (status) {
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

// What exchange-floor serves: the server's group commit (store::Batcher behind a
// store::BatchWriter) journaling every payload as received, and the FloorHandler.
class FloorService final : public cli::Service {
 public:
  explicit FloorService(const cli::Startup& start)
      : shutdown_(start.shutdown),
        // Seqs continue after the stored ones: they are the journal's primary key.
        last_seq_(start.db.last_journal_seq()),
        // Exactly the server's write path: the same writer (broken connections resolved
        // through the batch's marked journal row) behind the same group commit.
        writer_(start.options.serving.db, start.fencing, start.options.db_timeout,
                start.options.db_timeout),
        batcher_(
            [this](const store::JournalBatch& batch, store::Ticket t) {
              writer_.write(batch.entries, t);
            },
            // A failed batch fails with the one filling behind it, as in the server; there is
            // no engine to rebuild, so that is all.
            [this](store::Batcher& failing, store::Ticket failed, store::CommitResult outcome) {
              if (outcome == store::CommitResult::Fenced) fence(failing.fenced_why());
              for (auto& answer : failing.fail_open_batch(failed, outcome)) answer();
            }),
        handler_(batcher_) {
    batcher_.set_next_seq(last_seq_ + 1);
    batcher_.gather(cli::commit_gather(start.options.serving));
  }

  serving::Handler& handler() override { return handler_; }
  // Said once, whoever finds out first (a fenced append, or the lock's keeper).
  void fence(const std::string& why) override {
    if (fenced_.exchange(true)) return;
    EXCHANGE_LOG(error) << "fenced: " << why << "; stepping down";
    writer_.fence(why);
    shutdown_.step_down();
  }
  void start() override { batcher_.start(); }
  // Grace over: nothing more is written, waiting calls return now.
  void abandon() override {
    writer_.abandon();
    store::Watchdog::shared().fire_all();
  }
  void stop(bool) override { batcher_.stop(); }
  // The floor has no admin port; were it given one, it would be ready while it serves.
  app::Health::Status health(bool stopping) override {
    return {!stopping, stopping ? "stopping" : "ok"};
  }
  std::string loaded() override {
    return "journal continues after seq " + std::to_string(last_seq_);
  }
  std::string summary() override { return store::Batcher::describe(batcher_.stats()); }

 private:
  app::Shutdown& shutdown_;
  const std::int64_t last_seq_;
  store::BatchWriter writer_;
  std::atomic<bool> fenced_{false};
  store::Batcher batcher_;
  floor_server::FloorHandler handler_;
};

cli::ServeOptions serve_options(const Config& cfg) {
  cli::ServeOptions o;  // the server's defaults: timeouts, waits, grace, connection limits
  o.serving = cfg.serving;
  o.program = "exchange-floor";
  o.reset = cfg.reset;
  o.reset_note = "journal emptied (--reset)";
  o.check_database = refuse_exchange_database;
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything else: a SIGHUP while the settings are read must wait for the reload, not end
  // the process (lifecycle/shutdown.hpp).
  app::Shutdown::block_signals();
  util::set_log_program("exchange-floor");
  Config cfg;
  int exit_code = 0;
  if (!parse_flags(argc, argv, cfg, exit_code)) return exit_code;
  return cli::serve(serve_options(cfg), [](const cli::Startup& start) {
    return std::make_unique<FloorService>(start);
  });
}
