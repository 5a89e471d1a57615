#pragma once
// The settings app owns (util/settings.hpp): what one request may cost and what clients may
// make the exchange hold, the heavy-request and memory guards, the durable engine's projection
// and archive, and the standby's polling.
#include "app/durable_engine.hpp"
#include "app/request_handler.hpp"
#include "app/standby.hpp"
#include "util/settings.hpp"

namespace app {

// --max-accounts ... --max-reply-bytes.
void declare_settings(util::Settings& settings, Limits& limits);
// The parse limits (protocol/parse_settings.hpp), --heavy-..., --max-memory-bytes.
void declare_settings(util::Settings& settings, HandlerLimits& limits);
// Its Limits, --max-projection-rows, --heavy-pause-projection-rows, --projection-gather-ms,
// --journal-keep, --closed-orders-cached, --archive-connections.
void declare_settings(util::Settings& settings, DurableEngineOptions& options);
// --standby-poll-ms.
void declare_settings(util::Settings& settings, StandbyOptions& options);

}  // namespace app
