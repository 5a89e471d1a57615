#include "net/settings.hpp"

namespace net {

void declare_settings(util::Settings& s, ConnectionLimits& l) {
  const std::string group = "Connections";
  s.add("max-request-bytes", group, &l.max_request_bytes)
      .at_least(1)
      .unit("bytes")
      .help("largest request accepted; longer ones are refused before they are read");
  s.add("read-timeout-ms", group, &l.read_timeout)
      .at_least(1)
      .unit("ms")
      .help(
          "how long a client may take to send a whole request, counted from the connection (or "
          "the previous reply on a session); then it gets an error and is closed");
  s.add("max-connections", group, &l.max_connections)
      .at_least(1)
      .help(
          "open connections at once; at the cap a newcomer closes the oldest connection not yet "
          "authenticated, and only when every one is authenticated is it told 'Server busy'");
  s.add("max-pending-connections", group, &l.max_pending_connections)
      .at_least(1)
      .help(
          "connections not yet authenticated (TLS handshake, logon, or without --principals the "
          "first request) at once; beyond it a newcomer closes the oldest of them");
  s.add("logon-timeout-ms", group, &l.logon_timeout)
      .at_least(1)
      .unit("ms")
      .help(
          "a connection must be authenticated (with --principals: a listed certificate or a key "
          "logon; without: its first request) this long after its accept, TLS handshake "
          "included, or it is closed; then --read-timeout-ms applies");
}

void declare_settings(util::Settings& s, AdminLimits& l) {
  const std::string group = "Operations";
  s.add("admin-max-connections", group, &l.max_connections)
      .at_least(1)
      .help(
          "admin connections open at once; at the cap a newcomer closes the oldest one that has "
          "not sent its whole request yet, so idle or slow clients cannot lock operators out");
  s.add("admin-timeout-ms", group, &l.timeout)
      .at_least(1)
      .unit("ms")
      .help(
          "an admin client must send its whole request within this, counted from the "
          "connection, and gets as long again to read the answer; then it is closed");
}

}  // namespace net
