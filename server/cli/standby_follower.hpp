#pragma once
// exchange-server --standby (cli::Follower): the engine kept up to date from the active
// server's journal (app::Standby), which becomes the trading service at the takeover.
#include <memory>

#include "cli/role.hpp"
#include "cli/server_settings.hpp"

namespace cli {

std::unique_ptr<Follower> make_standby_follower(const ServerSettings& settings,
                                                const FollowerStartup& start);

}  // namespace cli
