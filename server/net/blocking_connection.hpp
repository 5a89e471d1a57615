#pragma once
// Drives a Session with blocking calls on one thread for the connection's whole life (the
// thread-per-client model): the TLS handshake (with limits.tls) under the read deadline, then
// poll and read under the session's deadline, writes bounded by the same deadline, each request
// run inline through `handle`. While the connection is pending (pending_slots.hpp) every
// deadline ends by its slot's, and an eviction shuts the socket down to wake this thread.
#include <functional>
#include <string>

#include "auth/caller.hpp"
#include "net/framing.hpp"
#include "net/pending_slots.hpp"

namespace net {

// Serves connection `fd` until the peer or the protocol ends it. The caller closes `fd`, once
// this has returned (`slot` is released by then). `handle` turns a request payload, and who
// sent it, into its reply document.
void serve_blocking(
    int fd, const ConnectionLimits& limits,
    const std::function<std::string(const std::string&, const auth::Caller&)>& handle,
    PendingSlots::Slot slot = {});

}  // namespace net
