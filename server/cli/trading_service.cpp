#include "cli/trading_service.hpp"

#include <chrono>
#include <string>

#include "app/health.hpp"
#include "app/request_handler.hpp"
#include "observability/metrics.hpp"
#include "store/pg_store.hpp"
#include "store/watchdog.hpp"

namespace cli {

namespace {

class TradingService final : public Service {
 public:
  // Start-up: loads the state from the database.
  TradingService(const ServerSettings& cfg, const Startup& start)
      : TradingService(cfg, TradingContext{start.options, start.shutdown, start.metrics,
                                           start.fencing, start.lease_valid}) {
    engine_.load();
    report(start.options);
  }
  // A standby's takeover: the state it kept up to date.
  TradingService(const ServerSettings& cfg, const TradingContext& context, app::Followed&& state)
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
  TradingService(const ServerSettings& cfg, const TradingContext& context)
      : metrics_(context.metrics),
        health_(context.options.serving.db, context.options.db_timeout, cfg.ready_max_lag),
        store_(context.options.serving.db, context.options.db_timeout),
        engine_(engine_options(cfg, context), store_, context.metrics, context.shutdown.stop_flag(),
                [this] { health_.database_answered(); }),
        handler_(engine_, context.metrics, cfg.handler, context.options.serving.loaded.gate) {}

  // Once the state is in: the metrics and the health check.
  void report(const ServeOptions& options) {
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

  static app::DurableEngineOptions engine_options(const ServerSettings& cfg,
                                                  const TradingContext& context) {
    app::DurableEngineOptions o = cfg.engine;
    o.fencing = context.fencing;
    o.db_timeout = context.options.db_timeout;
    o.commit_gather = commit_gather(context.options.serving);
    o.on_fenced = [&shutdown = context.shutdown] { shutdown.step_down(); };
    o.lease_valid = context.lease_valid;
    return o;
  }

  app::Metrics& metrics_;
  app::Health health_;
  store::PgStore store_;  // before the engine, which uses it to the end
  app::DurableEngine engine_;
  app::RequestHandler handler_;
};

}  // namespace

std::unique_ptr<Service> make_trading_service(const ServerSettings& settings,
                                              const Startup& start) {
  return std::make_unique<TradingService>(settings, start);
}

std::unique_ptr<Service> make_trading_service(const ServerSettings& settings,
                                              const TradingContext& context,
                                              app::Followed&& state) {
  return std::make_unique<TradingService>(settings, context, std::move(state));
}

}  // namespace cli
