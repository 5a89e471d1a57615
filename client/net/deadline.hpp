// Waiting on a socket until a deadline: the one blocking primitive of the client (poll).
#pragma once

#include <chrono>
#include <string>

namespace exch::net {

using Clock = std::chrono::steady_clock;

// Milliseconds left until `deadline` for poll(): 0 when it passed, rounded up otherwise.
int remaining_ms(Clock::time_point deadline);

// Waits until `fd` is ready for `events` (POLLIN, POLLOUT) or has an error; throws NetError
// "timeout WHAT PEER" when the deadline passes first.
void wait_for(int fd, short events, Clock::time_point deadline, const std::string& peer,
              const char* what);

}  // namespace exch::net
