#pragma once
// Who is on the other end of an accepted socket, for the logon rules (a key over plaintext only
// from loopback, the throttle by address) and for log lines.
#include "auth/gate.hpp"

namespace net {

// The peer of connected socket `fd`; `tls`: the connection speaks TLS. A peer the kernel no
// longer knows (already reset) gets the address "(peer gone)" and is not loopback.
auth::Peer peer_of(int fd, bool tls);

}  // namespace net
