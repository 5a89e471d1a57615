#include "cli/standby_follower.hpp"

#include <stdexcept>
#include <string>

#include "app/standby.hpp"
#include "cli/trading_service.hpp"
#include "store/pg_store.hpp"
#include "util/log.hpp"

namespace cli {

namespace {

class StandbyFollower final : public Follower {
 public:
  StandbyFollower(const ServerSettings& cfg, const FollowerStartup& start)
      : cfg_(cfg),
        options_(start.options),
        shutdown_(start.shutdown),
        metrics_(start.metrics),
        store_(start.options.serving.db, start.options.db_timeout),
        standby_(cfg.standby, store_, start.shutdown.stop_flag()) {
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
  std::unique_ptr<Service> take_over(std::int64_t epoch,
                                     std::function<bool()> lease_valid) override {
    // Once handed over, the standby holds nothing: a retry after a failed start must not build
    // an active server from an empty engine.
    if (handed_over_)
      throw std::runtime_error(
          "the standby's state was handed over already and the start "
          "failed; stepping down");
    app::Followed state = standby_.take_over();
    // The state has left the standby: there is no trying again from here.
    metrics_.set_state(nullptr);
    handed_over_ = true;
    try {
      return make_trading_service(
          cfg_,
          TradingContext{options_, shutdown_, metrics_, leadership::FencingToken{epoch},
                         std::move(lease_valid)},
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
  const ServerSettings& cfg_;
  const ServeOptions& options_;
  app::Shutdown& shutdown_;
  app::Metrics& metrics_;
  store::PgStore store_;  // before the standby, which uses it to the end
  app::Standby standby_;
  bool handed_over_ = false;
};

}  // namespace

std::unique_ptr<Follower> make_standby_follower(const ServerSettings& settings,
                                                const FollowerStartup& start) {
  return std::make_unique<StandbyFollower>(settings, start);
}

}  // namespace cli
