#pragma once
// The settings net owns (util/settings.hpp): the trading port's bounds per connection and the
// admin port's.
#include "net/admin_http.hpp"
#include "net/framing.hpp"
#include "util/settings.hpp"

namespace net {

// --max-request-bytes, --read-timeout-ms, --max-connections.
void declare_settings(util::Settings& settings, ConnectionLimits& limits);
// --admin-max-connections, --admin-timeout-ms.
void declare_settings(util::Settings& settings, AdminLimits& limits);

}  // namespace net
