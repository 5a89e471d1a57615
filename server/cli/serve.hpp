#pragma once
// The lifecycle of a serving process, one copy for exchange-server and exchange-floor, which
// differ only in what they serve (a cli::Service: its state and its serving::Handler) and in
// their own flags:
//
//   the descriptor limit, SIGPIPE ignored, SIGINT/SIGTERM taken by app::Shutdown; connect to
//   PostgreSQL (retrying while it is unreachable); take the database's writer lock; apply the
//   schema; check the database (the floor refuses an exchange's); begin the writer epoch;
//   --reset; build the Service on the set-up connection; keep the writer lock (a lost lock
//   fences the Service); the --metrics CSV; the concurrency model; the admin port; then the
//   trading listener (after the admin port: a client that can connect finds /healthz up);
//   start the Service; serve until a signal or a step-down; let requests in flight finish
//   within the grace period (then the Service abandons the rest); stop the Service.
//
// With --standby (a Follower, cli/role.hpp) it does not wait for the writer lock: it queues for
// it, loads the state and serves the standby's answer while following the journal, and takes
// over (epoch, journal tail, the Service) once the lock is its own.
//
// Exit status: 0 drained (or stopped before serving), 1 a fatal error (also: another process
// holds the writer lock), 3 requests had to be failed after the grace period, 4 stepped down
// because another process took the database over. (2, bad settings, is the binary's own, from
// cli/settings_parser.hpp and finish_serving_flags.)
#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "app/health.hpp"
#include "cli/serving_flags.hpp"
#include "leadership/fencing.hpp"
#include "lifecycle/shutdown.hpp"
#include "net/admin_http.hpp"
#include "net/buffer_budget.hpp"
#include "net/framing.hpp"
#include "observability/metrics.hpp"
#include "serving/handler.hpp"
#include "store/database.hpp"

namespace cli {

// The operator's HTTP port (--admin-port and its companions): GET /metrics, GET /healthz.
struct AdminOptions {
  unsigned port = 0;  // 0: no admin port
  std::string bind = "127.0.0.1";
  net::AdminLimits limits;
};

struct ServeOptions {
  ServingFlags serving;      // checked by finish_serving_flags
  std::string program;       // holder of the writer lock: "exchange-server"
  std::string schema_path;   // a schema file to apply; empty: the built-in schema.sql
  bool reset = false;        // --reset: setup's reset() before the Service is built
  std::string reset_note;    // logged after it
  int db_wait_seconds = 30;  // --db-wait
  std::chrono::milliseconds db_timeout = store::kDefaultDbTimeout;
  std::chrono::milliseconds writer_lock_wait{5000};
  std::chrono::milliseconds lease{
      5000};             // --lease-ms: the writer's lease (leadership/writer_lock.hpp)
  bool standby = false;  // --standby: follow, take over (cli/role.hpp)
  std::chrono::milliseconds shutdown_grace{10000};
  // Of the trading port; the budget comes from max_buffered_bytes.
  net::ConnectionLimits limits;
  std::size_t max_buffered_bytes = net::kDefaultMaxBufferedBytes;
  unsigned simulated_io_ms_per_child = 0;
  std::string metrics_path;  // --metrics: one CSV row per second; empty: none
  AdminOptions admin;
  // Descriptors the binary needs beyond the connections, the model's threads and 64.
  rlim_t extra_descriptors = 0;
  // Runs once the schema is applied, before the writer epoch begins (which would fence
  // another writer) and before --reset: throws to refuse the database. May be empty.
  std::function<void(const std::string& conninfo)> check_database;
};

// What a binary serves: built once the database is locked, its schema applied and the writer
// epoch begun; destroyed after serving ended (and after the admin port has stopped).
class Service {
 public:
  virtual ~Service() = default;
  // What the concurrency model runs every request with.
  virtual serving::Handler& handler() = 0;
  // Another process took the database over (the writer lock's keeper found out): stop writing
  // and step down. Any thread.
  virtual void fence(const std::string& why) = 0;
  // The admin port and the listener are up: start the threads behind the replies.
  virtual void start() = 0;
  // The grace period is over: fail what still waits, make waiting calls return. Any thread.
  virtual void abandon() = 0;
  // Serving has ended (every reply written). `forced`: the grace period ran out.
  virtual void stop(bool forced) = 0;
  // What /healthz answers. `stopping`: a shutdown has begun. Admin thread.
  virtual app::Health::Status health(bool stopping) = 0;
  // For the log: "serving on ... (what was loaded)", "stopped after <summary>".
  virtual std::string loaded() = 0;
  virtual std::string summary() = 0;
};

// What a Service is built from.
struct Startup {
  const ServeOptions& options;       // options.serving.db with the connection bounds applied
  store::Database& db;               // the set-up connection: schema applied, --reset done
  leadership::FencingToken fencing;  // this process's epoch, begun: every write carries it
  app::Shutdown& shutdown;           // step_down() when fenced
  app::Metrics& metrics;             // the process's; the Service clears what it set before it goes
  // Whether the writer lease still holds (leadership::WriterLock::lease_valid). Any thread, cheap.
  std::function<bool()> lease_valid;
};

using MakeService = std::function<std::unique_ptr<Service>(const Startup&)>;

class Follower;
struct FollowerStartup;
using MakeFollower = std::function<std::unique_ptr<Follower>(const FollowerStartup&)>;

// The schema a server applies once it holds the writer lock: `path`'s, or the built-in
// schema.sql when empty. Throws if the file cannot be read.
std::string schema_sql(const std::string& path);

// Runs the whole lifecycle and returns the exit status (see above). Call from main once the
// flags are parsed, before any thread is started. `follow` builds the standby of
// options.standby (cli/role.hpp); a binary without one leaves it empty.
int serve(ServeOptions options, const MakeService& make, const MakeFollower& follow = nullptr);

}  // namespace cli
