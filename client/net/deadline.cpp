#include "net/deadline.hpp"

#include <poll.h>

#include <cerrno>
#include <cstring>

#include "net/errors.hpp"

namespace exch::net {

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return 0;
  if (left.count() > 1000 * 1000 * 1000) return 1000 * 1000 * 1000;
  // round up so that a sub-millisecond remainder still waits
  return static_cast<int>(left.count()) + 1;
}

void wait_for(int fd, short events, Clock::time_point deadline, const std::string& peer,
              const char* what) {
  for (;;) {
    pollfd p{fd, events, 0};
    int ms = remaining_ms(deadline);
    if (ms == 0) throw NetError("timeout " + std::string(what) + " " + peer);
    int rc = ::poll(&p, 1, ms);
    if (rc > 0) return;     // readable/writable or error: the next syscall tells
    if (rc == 0) continue;  // loop re-checks the deadline
    if (errno == EINTR) continue;
    throw NetError("poll failed on " + peer + ": " + std::strerror(errno));
  }
}

}  // namespace exch::net
