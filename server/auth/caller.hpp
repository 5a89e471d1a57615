#pragma once
// Who sent a request, as the connection established it: handed with the payload from the
// session (net) through the concurrency model to the handler (app), which checks it against the
// principals in force. Plain strings, so neither side needs the other's types.
#include <string>

namespace auth {

struct Caller {
  std::string principal;  // empty: authentication is off (no --principals)
  std::string peer;       // "ip:port", for log lines
};

}  // namespace auth
