#pragma once
// What exchange-server serves (cli::Service): the durable engine (app::DurableEngine: the engine
// under its lock, the group commit, the projection, the archive of closed orders) loaded from
// the database, or taken over from the standby it was, and the request handler in front of it.
#include <cstdint>
#include <functional>
#include <memory>

#include "app/standby.hpp"
#include "cli/serve.hpp"
#include "cli/server_settings.hpp"
#include "leadership/fencing.hpp"

namespace cli {

// What it is built from, at start-up or at a standby's takeover.
struct TradingContext {
  const ServeOptions& options;
  app::Shutdown& shutdown;
  app::Metrics& metrics;
  leadership::FencingToken fencing;  // every write carries it
  std::function<bool()> lease_valid;
};

// Start-up: loads the state from the database.
std::unique_ptr<Service> make_trading_service(const ServerSettings& settings, const Startup& start);
// A standby's takeover: the state it kept up to date.
std::unique_ptr<Service> make_trading_service(const ServerSettings& settings,
                                              const TradingContext& context, app::Followed&& state);

}  // namespace cli
