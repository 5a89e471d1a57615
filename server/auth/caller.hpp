#pragma once
// Who sent a request, as the connection established it: handed with the payload from the
// session (net) through the concurrency model to the handler (app), which checks it against the
// principals in force. Plain strings, so neither side needs the other's types.
#include <cstdint>
#include <string>

namespace auth {

struct Caller {
  std::string principal;  // empty: authentication is off (no --principals)
  std::string peer;       // "ip:port", for log lines
  // The generation of the principal's entry the session logged on with (Principal::generation):
  // a request is refused once it is no longer the entry's.
  std::uint64_t generation = 0;
};

}  // namespace auth
