#pragma once
// Drives a Session with blocking calls on one thread for the connection's whole life (the
// thread-per-client model): poll and recv under the session's deadline, send bounded by the
// same deadline, each request run inline through `handle`.
#include <functional>
#include <string>

#include "net/framing.hpp"

namespace net {

// Serves connection `fd` until the peer or the protocol ends it. The caller closes `fd`.
// `handle` turns a request payload into its reply document.
void serve_blocking(int fd, const ConnectionLimits& limits,
                    const std::function<std::string(const std::string&)>& handle);

}  // namespace net
