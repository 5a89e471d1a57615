#include "net/blocking_connection.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace net {

BlockingConnection::BlockingConnection(int fd, const ConnectionLimits& limits)
    : fd_(fd), reader_(limits.max_request_bytes), read_timeout_(limits.read_timeout) {
  // A peer that does not read its reply does not hold this thread for ever either.
  timeval tv{};
  tv.tv_sec = limits.read_timeout.count() / 1000;
  tv.tv_usec = (limits.read_timeout.count() % 1000) * 1000;
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

BlockingConnection::~BlockingConnection() { ::close(fd_); }

bool BlockingConnection::read_request(std::string& payload) {
  // Without a session, one request per connection.
  if (served_one_ && !persistent_) return false;
  // One deadline for the whole request, not per recv: a client that stalls mid-request, idles
  // on a session, or trickles a byte at a time does not hold this thread past the timeout.
  const auto deadline = std::chrono::steady_clock::now() + read_timeout_;
  char buf[16384];
  for (;;) {
    std::string out;
    switch (reader_.next(out)) {
      case FrameReader::Event::Request:
        served_one_ = true;
        payload = std::move(out);
        return true;
      case FrameReader::Event::SessionHello:
        persistent_ = true;
        if (!send_all(std::string(kSessionAccept))) return false;
        continue;
      case FrameReader::Event::Error:
        send_all(frame_reply(framing_error_reply(out), persistent_));
        return false;
      case FrameReader::Event::NeedMore:
        break;
    }
    ssize_t n = -1;  // stays -1 when the deadline passes
    auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() > 0) {
      pollfd p{fd_, POLLIN, 0};
      // In slices of at most a minute: poll() takes an int, --read-timeout-ms may not fit.
      int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 60000)));
      if (ready == 0 || (ready < 0 && errno == EINTR)) continue;  // the deadline is re-checked
      if (ready > 0) {
        n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
      }
    }
    if (n <= 0) {
      if (reader_.mid_request()) {
        const char* why = n == 0 ? "Bad framing: connection closed before the whole request "
                                   "arrived"
                                 : "Bad framing: timed out waiting for the rest of the request";
        send_all(frame_reply(framing_error_reply(why), persistent_));
      }
      return false;
    }
    reader_.feed(buf, static_cast<std::size_t>(n));
  }
}

bool BlockingConnection::send_reply(std::string xml) {
  return send_all(frame_reply(std::move(xml), persistent_));
}

bool BlockingConnection::send_all(const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

void serve_blocking(BlockingConnection& conn,
                    const std::function<std::string(const std::string&)>& handle) {
  std::string payload;
  while (conn.read_request(payload))
    if (!conn.send_reply(handle(payload))) break;
}

}  // namespace net
