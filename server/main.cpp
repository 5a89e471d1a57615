// exchange-server: the order-matching exchange. Its settings (cli/server_settings.hpp, from
// flags and --config FILE), then the process around what it serves (cli::serve, cli/serve.hpp):
// the database's writer lock -> load state -> serve with the chosen concurrency model until
// SIGINT/SIGTERM -> finish in-flight requests within the grace period -> exit 0 (everything
// drained) or 3 (requests had to be failed). Another server holding the writer lock: exit 1 at
// start-up; another server taking the database over while this one serves (fenced): step
// down, exit 4. Bad settings: exit 2. What it serves: the trading service
// (cli/trading_service.hpp), or with --standby the follower of the active server's journal
// that becomes one when it takes over (cli/standby_follower.hpp).
#include "cli/serve.hpp"
#include "cli/server_settings.hpp"
#include "cli/standby_follower.hpp"
#include "cli/trading_service.hpp"
#include "lifecycle/shutdown.hpp"

int main(int argc, char** argv) {
  // Before anything else: a SIGHUP while the settings are read must wait for the reload, not end
  // the process (lifecycle/shutdown.hpp).
  app::Shutdown::block_signals();
  cli::ServerSettings settings;
  if (auto status = cli::parse_server_settings(argc, argv, settings)) return *status;
  return cli::serve(
      settings.serve,
      [&settings](const cli::Startup& start) { return cli::make_trading_service(settings, start); },
      [&settings](const cli::FollowerStartup& start) {
        return cli::make_standby_follower(settings, start);
      });
}
