#pragma once
// exchange-server's settings: every layer's options struct, each declared by its layer
// (net/settings.hpp, gates/settings.hpp, app/settings.hpp, ...), the process's here, parsed from
// the command line and --config FILE (cli/settings_parser.hpp), then checked together.
#include <chrono>
#include <optional>

#include "app/durable_engine.hpp"
#include "app/request_handler.hpp"
#include "app/standby.hpp"
#include "cli/serve.hpp"

namespace cli {

struct ServerSettings {
  ServeOptions serve;                // the serving flags, connections, database, admin port
  app::HandlerLimits handler;        // request shape, heavy requests, memory budget
  app::DurableEngineOptions engine;  // request limits, projection, archive
  app::StandbyOptions standby;       // --standby-poll-ms
  // /healthz answers 503 while the projection or the group commit is behind by this much.
  std::chrono::milliseconds ready_max_lag{10000};
};

// Fills `out` from argv. Returns the exit status when the process should end now (0 after
// --help, 2 after logging what is wrong).
std::optional<int> parse_server_settings(int argc, char** argv, ServerSettings& out);

}  // namespace cli
