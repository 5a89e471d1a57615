#include "net/blocking_connection.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "net/session.hpp"

namespace net {
namespace {

using Clock = std::chrono::steady_clock;

// No deadline is the latest time point (a plain value rather than std::optional, which GCC's
// -Wmaybe-uninitialized misreads in release builds).
constexpr Clock::time_point kNoDeadline = Clock::time_point::max();

// Milliseconds left until `deadline` (none: wait a minute and look again), at least 0.
int poll_timeout(Clock::time_point deadline) {
  if (deadline == kNoDeadline) return 60000;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  // In slices of at most a minute: poll() takes an int, --read-timeout-ms may not fit.
  return static_cast<int>(std::clamp<long long>(left, 0, 60000));
}

enum class Io { Done, Failed, TimedOut };

// Writes all of `bytes` before the deadline; a peer that stops reading fails at the deadline.
Io send_all(int fd, const std::string& bytes, Clock::time_point deadline) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (Clock::now() >= deadline) return Io::TimedOut;
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, poll_timeout(deadline));
      continue;
    }
    return Io::Failed;  // EPIPE, ECONNRESET, ...: the peer is gone
  }
  return Io::Done;
}

}  // namespace

void serve_blocking(int fd, const ConnectionLimits& limits,
                    const std::function<std::string(const std::string&)>& handle) {
  Session session(limits);
  Clock::time_point deadline = kNoDeadline;
  char buf[16384];
  session.started();
  for (;;) {
    Session::Action action;
    while (session.next(action)) {
      switch (action.kind) {
        case Session::Action::Kind::Send:
          switch (send_all(fd, action.data, deadline)) {
            case Io::Done:
              session.sent();
              break;
            case Io::Failed:
              session.failed();
              break;
            case Io::TimedOut:
              session.timed_out();
              break;
          }
          break;
        case Session::Action::Kind::Dispatch:
          session.replied(handle(action.data));
          break;
        case Session::Action::Kind::StartDeadline:
          deadline = Clock::now() + limits.read_timeout;
          break;
        case Session::Action::Kind::StopDeadline:
          deadline = kNoDeadline;
          break;
        case Session::Action::Kind::Close:
          return;  // the caller closes `fd`
      }
    }
    // The session has no action left, so it waits for bytes: this driver never leaves a reply
    // or a write pending. Anything else would be a session bug; closing beats hanging.
    if (!session.wants_read()) {
      session.failed();
      continue;
    }
    if (Clock::now() >= deadline) {
      session.timed_out();
      continue;
    }
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, poll_timeout(deadline));
    if (ready <= 0) continue;  // timeout or EINTR: the deadline is checked above
    ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0)
      session.received(buf, static_cast<std::size_t>(n));
    else if (n == 0)
      session.peer_closed();
    else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
      session.failed();
  }
}

}  // namespace net
