#pragma once
// libpq parameters that bound every wait on PostgreSQL at the TCP level: how long connecting
// may take, and how long a connection may stay silent (keepalives while idle, tcp_user_timeout
// while data is unacknowledged) before the kernel declares it dead. Without them a database
// host that vanishes without a reset (power loss, partition) is noticed only after the
// kernel's retransmission timeout, about 15 minutes.
#include <chrono>
#include <string>

namespace store {

struct ConnectionBounds {
  int connect_timeout_s = 5;  // libpq treats values below 2 as 2
  int keepalives_idle_s = 5;
  int keepalives_interval_s = 2;
  int keepalives_count = 3;
  int tcp_user_timeout_ms = 5000;
};

// Bounds in proportion to --db-timeout-ms: a connection silent for about that long is dead.
ConnectionBounds bounds_for_timeout(std::chrono::milliseconds timeout);

// `conninfo` (a key=value string or a postgres:// / postgresql:// URI) with the bounds added,
// except those it already sets: the operator's choice wins.
std::string with_connection_bounds(const std::string& conninfo, const ConnectionBounds& bounds);

}  // namespace store
