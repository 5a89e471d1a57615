#include "net/blocking_connection.hpp"

#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>

namespace net {

BlockingConnection::BlockingConnection(int fd, const ConnectionLimits& limits)
    : fd_(fd), reader_(limits.max_request_bytes) {
  // A client that stalls mid-request (or idles on a persistent session) does not hold this
  // thread longer than the read timeout.
  timeval tv{};
  tv.tv_sec = limits.read_timeout.count() / 1000;
  tv.tv_usec = (limits.read_timeout.count() % 1000) * 1000;
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

BlockingConnection::~BlockingConnection() { ::close(fd_); }

bool BlockingConnection::read_request(std::string& payload) {
  // Without a session, one request per connection.
  if (served_one_ && !persistent_) return false;
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
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
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
