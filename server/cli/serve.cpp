#include "cli/serve.hpp"

#include <csignal>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "cli/role.hpp"
#include "cli/security.hpp"
#include "concurrency/model.hpp"
#include "leadership/writer_lock.hpp"
#include "net/listener.hpp"
#include "schema_sql.hpp"
#include "store/batch_writer.hpp"
#include "store/connection_bounds.hpp"
#include "util/log.hpp"

namespace cli {
namespace {

// Each connection holds a descriptor, so the usual soft limit of 1024 would be hit long before
// --max-connections: raises it to the hard limit, and warns if even that is below `needed`.
void raise_descriptor_limit(rlim_t needed) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return;
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < needed)
    EXCHANGE_LOG(warn) << "the descriptor limit (ulimit -n) is " << lim.rlim_cur << ", below the "
                       << needed << " that --max-connections and --max-threads may need: "
                       << "connections beyond it fail at accept instead of getting 'Server "
                          "busy'; raise the hard limit or lower --max-connections";
}

// The exit status after `error` ended start-up or serving: 4 if the process stepped down
// (another server took over its database), 0 if a stop had been requested (a shutdown while
// PostgreSQL was still awaited; logged as a warning), otherwise 1 (logged).
int fatal_status(const app::Shutdown& shutdown, const std::exception& error) {
  if (shutdown.stepped_down()) {
    EXCHANGE_LOG(warn) << "stepped down: " << error.what();
    return app::Shutdown::kSteppedDown;
  }
  if (shutdown.stop_flag().requested()) {
    EXCHANGE_LOG(warn) << "stopped before serving: " << error.what();
    return 0;
  }
  EXCHANGE_LOG(error) << error.what();
  return 1;
}

// The exit status once serving ended: 4 (logged) when it stepped down because another server
// took over its database, 3 (logged) when the shutdown's grace period ran out with requests
// still waiting, otherwise 0.
int exit_status(const app::Shutdown& shutdown) {
  if (shutdown.stepped_down()) {
    EXCHANGE_LOG(warn) << "exiting " << app::Shutdown::kSteppedDown
                       << ": another server took over the database";
    return app::Shutdown::kSteppedDown;
  }
  if (!shutdown.forced()) return 0;
  EXCHANGE_LOG(warn) << "exiting " << app::Shutdown::kNotDrained
                     << ": requests still waiting after the grace period were failed";
  return app::Shutdown::kNotDrained;
}

// The writer lock's keeper runs from the epoch bump on, before the Service exists: tells the
// Service that it was fenced, or, while it is still being built, stops the start-up (it is
// told once attached).
class FenceRelay {
 public:
  explicit FenceRelay(app::Shutdown& shutdown) : shutdown_(shutdown) {}
  void fence(const std::string& why) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (service_) return service_->fence(why);
    if (!why_.empty()) return;
    why_ = why;
    EXCHANGE_LOG(error) << "fenced while loading: " << why << "; stepping down";
    shutdown_.step_down();
  }
  void attach(Service& service) {
    std::lock_guard<std::mutex> lock(mutex_);
    service_ = &service;
    if (!why_.empty()) service.fence(why_);
  }

 private:
  app::Shutdown& shutdown_;
  std::mutex mutex_;
  Service* service_ = nullptr;
  std::string why_;
};

// GET /metrics (Prometheus text) and GET /healthz (200 "ok", or 503 and why).
std::unique_ptr<net::AdminHttpServer> start_admin(const AdminOptions& admin, app::Metrics& metrics,
                                                  Service& service, const app::Shutdown& shutdown) {
  auto server = std::make_unique<net::AdminHttpServer>(
      admin.bind, static_cast<std::uint16_t>(admin.port),
      [&metrics, &service, &shutdown](const std::string& target) {
        std::string path = target.substr(0, target.find('?'));
        if (path == "/metrics")
          return net::HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8",
                                   metrics.prometheus_text()};
        if (path == "/healthz") {
          auto st = service.health(shutdown.stop_flag().requested());
          return net::HttpResponse{st.healthy ? 200u : 503u, "text/plain; charset=utf-8",
                                   st.reason + "\n"};
        }
        return net::HttpResponse{404, "text/plain; charset=utf-8",
                                 "not found: try /metrics or /healthz\n"};
      },
      admin.limits);
  EXCHANGE_LOG(info) << "admin HTTP on " << admin.bind << ":" << server->port()
                     << " (/metrics, /healthz)";
  if (!is_loopback_bind(admin.bind))
    EXCHANGE_LOG(warn) << "the admin port listens on " << admin.bind
                       << ", beyond this machine: /metrics and /healthz need no authentication, "
                          "so anyone who reaches it can read them (keep --admin-bind on loopback "
                          "or behind a firewall)";
  return server;
}

// The server needs to own its tables and end a stale writer's session (pg_signal_backend), not
// a superuser's powers: says so when it has them (docs/OPERATIONS.md, "The database role").
void warn_if_superuser(store::Database& db) {
  if (db.superuser())
    EXCHANGE_LOG(warn) << "connected to PostgreSQL as a superuser: a role that owns the "
                          "exchange's tables and is granted pg_signal_backend is enough "
                          "(docs/OPERATIONS.md, \"The database role\")";
}

// Stops the writer lock's keeper, if one was started, when it goes out of scope.
struct StopKeeper {
  std::unique_ptr<leadership::WriterLock>& lock;
  ~StopKeeper() {
    if (lock) lock->stop_keeping();
  }
};

// The active server's start-up: takes the database's writer lock (into `writer_lock`, held
// until the process exits), applies the schema, fences the previous writer, and builds the
// Service from the state it loads. The lock's keeper reports a fence to `relay`.
std::unique_ptr<Service> start_active(const ServeOptions& options, const MakeService& make,
                                      app::Shutdown& shutdown, app::Metrics& metrics,
                                      FenceRelay& relay,
                                      std::unique_ptr<leadership::WriterLock>& writer_lock) {
  auto setup = store::connect_with_retry(options.serving.db, options.db_wait_seconds,
                                         &shutdown.stop_flag(), options.db_timeout);
  // One writer per database, before anything is read or written (a second server is
  // refused here, without touching the database); held until the process exits.
  writer_lock = std::make_unique<leadership::WriterLock>(
      leadership::WriterLock::Options{options.serving.db, options.program, options.writer_lock_wait,
                                      options.db_timeout, options.lease},
      &shutdown.stop_flag());
  warn_if_superuser(*setup);
  setup->apply_schema(schema_sql(options.schema_path));
  if (options.check_database) options.check_database(options.serving.db);
  // From here on the previous writer's appends are fenced: the state loaded next is final.
  const leadership::FencingToken fencing{writer_lock->begin_epoch()};
  // Kept, and its lease renewed, from now on: through a load that may outlast the lease.
  writer_lock->keep([&relay](const std::string& why) { relay.fence(why); });
  if (options.reset) {
    setup->reset();
    EXCHANGE_LOG(info) << options.reset_note;
  }
  leadership::WriterLock* lock = writer_lock.get();
  return make(
      Startup{options, *setup, fencing, shutdown, metrics, [lock] { return lock->lease_valid(); }});
}

// The concurrency model that serves clients, with the connection limits, buffer budget,
// authentication and TLS of `options`.
std::unique_ptr<concurrency::Model> make_model(const ServeOptions& options) {
  concurrency::ModelOptions for_model = model_options(options.serving);
  for_model.simulated_io_ms_per_child = options.simulated_io_ms_per_child;
  for_model.limits = options.limits;
  for_model.limits.budget = std::make_shared<net::BufferBudget>(options.max_buffered_bytes);
  for_model.limits.auth = options.serving.loaded.gate;
  for_model.limits.tls = options.serving.loaded.tls;
  return concurrency::find_model(options.serving.model)->make(for_model);
}

// What a signal does (app::Shutdown): stop the model, abandon what the service still waits
// for, and on SIGHUP reload the principals file.
void set_shutdown_actions(app::Shutdown& shutdown, concurrency::Model& model, Service& service,
                          std::shared_ptr<auth::Gate> gate) {
  shutdown.set_actions([&model] { model.stop(); }, [&service] { service.abandon(); },
                       [gate = std::move(gate)] {
                         if (gate)
                           gate->reload();
                         else
                           EXCHANGE_LOG(info) << "SIGHUP: nothing to reload (no --principals)";
                       });
}

// Serves clients (and operators, on the admin port) until a signal or a step-down stops the
// model, then stops the service and the metrics.
void serve_clients(const ServeOptions& options, Service& service, app::Shutdown& shutdown,
                   app::Metrics& metrics) {
  metrics.set_auth(options.serving.loaded.gate);
  auto model = make_model(options);
  std::unique_ptr<net::AdminHttpServer> admin;
  if (options.admin.port != 0) admin = start_admin(options.admin, metrics, service, shutdown);
  // Before what the admin port reads goes away, also on the way out of an exception.
  struct StopAdmin {
    std::unique_ptr<net::AdminHttpServer>& admin;
    ~StopAdmin() {
      if (admin) admin->stop();
    }
  } stop_admin{admin};
  // Bound after the admin port: once clients (and tests) can connect, operators can too.
  net::Listener listener(options.serving.bind, static_cast<std::uint16_t>(options.serving.port));

  service.start();
  set_shutdown_actions(shutdown, *model, service, options.serving.loaded.gate);
  // The actions touch what is declared above: they end before it is destroyed.
  struct ActionsEnd {
    app::Shutdown& s;
    ~ActionsEnd() { s.finished(); }
  } actions_end{shutdown};
  EXCHANGE_LOG(info) << "serving on " << options.serving.bind << ":" << listener.port()
                     << " with model " << options.serving.model << " (" << service.loaded() << ")";
  if (!shutdown.stop_flag().requested()) model->run(listener, service.handler(), metrics);
  service.stop(shutdown.forced());
  shutdown.finished();
  metrics.stop();
  EXCHANGE_LOG(info) << "stopped after " << service.summary();
}

}  // namespace

std::string schema_sql(const std::string& path) {
  if (path.empty()) return kSchemaSql;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read --schema " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int serve(ServeOptions options, const MakeService& make, const MakeFollower& follow) {
  raise_descriptor_limit(options.limits.max_connections + options.serving.max_threads +
                         options.extra_descriptors + 64);
  // A peer that closes while we write is an error code on that connection (EPIPE), never a
  // signal that ends the process: every send uses MSG_NOSIGNAL, and this covers the rest.
  std::signal(SIGPIPE, SIG_IGN);
  // Signals are taken by one thread; every thread started later inherits the mask.
  app::Shutdown shutdown{options.shutdown_grace};
  options.serving.db = store::with_connection_bounds(options.serving.db,
                                                     store::bounds_for_timeout(options.db_timeout));

  try {
    app::Metrics metrics;
    FenceRelay relay(shutdown);
    std::unique_ptr<leadership::WriterLock> writer_lock;
    std::unique_ptr<Service> service;
    // The keeper calls into the service: it ends before the service is destroyed, also on the
    // way out of an exception.
    StopKeeper stop_keeper{writer_lock};
    if (options.standby) {
      // Queues for the lock, loads, and takes over by itself once the lock is its own.
      service = std::make_unique<StandbyRole>(options, follow, shutdown, metrics);
    } else {
      service = start_active(options, make, shutdown, metrics, relay, writer_lock);
      relay.attach(*service);
    }
    if (!options.metrics_path.empty()) metrics.start_csv(options.metrics_path);
    serve_clients(options, *service, shutdown, metrics);
  } catch (const std::exception& e) {
    return fatal_status(shutdown, e);
  }
  return exit_status(shutdown);
}

}  // namespace cli
