#pragma once
// The settings app owns (util/settings.hpp): the request handler's parse limits and its
// heavy-request and memory guards, the durable engine's projection and archive (with the
// request limits, gates/settings.hpp), and the standby's polling.
#include "app/durable_engine.hpp"
#include "app/request_handler.hpp"
#include "app/standby.hpp"
#include "util/settings.hpp"

namespace app {

// The parse limits (protocol/parse_settings.hpp), --heavy-..., --max-memory-bytes.
void declare_settings(util::Settings& settings, HandlerLimits& limits);
// Its Limits, --max-projection-rows, --heavy-pause-projection-rows, --projection-gather-ms,
// --journal-keep, --closed-orders-cached, --archive-connections.
void declare_settings(util::Settings& settings, DurableEngineOptions& options);
// --standby-poll-ms.
void declare_settings(util::Settings& settings, StandbyOptions& options);

}  // namespace app
