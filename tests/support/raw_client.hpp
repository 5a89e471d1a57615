#pragma once
// A raw client socket for tests of misbehaving clients: it sends and reads exactly what it is
// told, stops anywhere, and ends a connection by reset or half-close.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <stdexcept>
#include <string>

#include "support/loopback.hpp"

namespace testing_support {

// A raw client socket that can stop at any byte and end the connection either way a hostile
// peer can: a reset (SO_LINGER {1, 0}, then close) or a half-close (shutdown(SHUT_WR)). Every
// wait has a deadline, so a server that hangs fails the test instead of hanging it.
class RawClient {
 public:
  using Clock = std::chrono::steady_clock;
  enum class SendResult { Sent, PeerGone, TimedOut };

  // `receive_buffer` > 0 fixes SO_RCVBUF before connecting (a small window makes the server's
  // writes stall early, as behind a slow reader).
  explicit RawClient(unsigned short port, int receive_buffer = 0)
      : fd_(connect_loopback(port, receive_buffer)) {}
  ~RawClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  SendResult send_within(const std::string& bytes, Clock::time_point deadline) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      ssize_t n =
          ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        sent += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        return SendResult::PeerGone;
      if (Clock::now() >= deadline) return SendResult::TimedOut;
      pollfd p{fd_, POLLOUT, 0};
      ::poll(&p, 1, remaining_ms(deadline));
      if (p.revents & (POLLERR | POLLHUP)) return SendResult::PeerGone;
    }
    return SendResult::Sent;
  }

  // Throws if the bytes cannot be sent: a stage of a kind that must be reached.
  void send(const std::string& bytes) {
    if (!try_send(bytes))
      throw std::runtime_error("the server did not take " + std::to_string(bytes.size()) +
                               " bytes");
  }
  // False once the server has closed the connection (or took nothing for 10 s).
  bool try_send(const std::string& bytes) {
    return send_within(bytes, Clock::now() + std::chrono::seconds(10)) == SendResult::Sent;
  }

  // The connection ends with a reset: the server sees ECONNRESET, and any write to it fails.
  void reset() {
    linger l{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    ::close(fd_);
    fd_ = -1;
  }

  void half_close() { ::shutdown(fd_, SHUT_WR); }

  // Reads until the server ends the connection (EOF or reset: `ended`) or `within` passes.
  std::string read_to_end(std::chrono::milliseconds within, bool& ended) {
    auto deadline = Clock::now() + within;
    ended = false;
    std::string out = std::move(pending_);
    pending_.clear();
    while (Clock::now() < deadline) {
      if (!readable(deadline)) continue;
      char buf[65536];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        ended = true;
        return out;
      }
      out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
  }

  // Whether the server ends the connection (EOF or reset) within `within`; what it sends
  // first is read and dropped.
  bool ended_within(std::chrono::milliseconds within) {
    bool ended = false;
    read_to_end(within, ended);
    return ended;
  }

  // Whether the server sends something (or ends the connection) within `within`.
  bool readable_within(std::chrono::milliseconds within) {
    return !pending_.empty() || readable(Clock::now() + within);
  }

  // At least `size` bytes (kept for the next read), or throws when the server ends first.
  void read_at_least(std::size_t size, std::chrono::milliseconds within) {
    auto deadline = Clock::now() + within;
    while (pending_.size() < size) {
      if (Clock::now() >= deadline) throw std::runtime_error("no reply within the deadline");
      if (!readable(deadline)) continue;
      char buf[65536];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) throw std::runtime_error("the server closed before replying: " + pending_);
      pending_.append(buf, static_cast<std::size_t>(n));
    }
  }

  // The session acknowledgement, then one framed reply.
  std::string read_line(std::chrono::milliseconds within) {
    auto deadline = Clock::now() + within;
    for (;;) {
      auto nl = pending_.find('\n');
      if (nl != std::string::npos) {
        std::string line = pending_.substr(0, nl + 1);
        pending_.erase(0, nl + 1);
        return line;
      }
      read_at_least(pending_.size() + 1, std::chrono::milliseconds(remaining_ms(deadline)));
    }
  }
  std::string read_framed(std::chrono::milliseconds within) {
    auto deadline = Clock::now() + within;
    std::string line = read_line(within);
    std::size_t size = std::stoul(line);
    read_at_least(size, std::chrono::milliseconds(remaining_ms(deadline)));
    std::string xml = pending_.substr(0, size);
    pending_.erase(0, size);
    return xml;
  }

  // Waits for the server to end the connection without reading anything: true once it is
  // reset (the server closed with unread bytes from us, or answered later bytes with a reset).
  bool wait_reset(Clock::time_point deadline) {
    while (Clock::now() < deadline) {
      pollfd p{fd_, 0, 0};  // no events asked for: only POLLERR and POLLHUP wake it
      if (::poll(&p, 1, std::min(200, remaining_ms(deadline))) > 0 &&
          (p.revents & (POLLERR | POLLHUP)))
        return true;
      // One more byte (the start of a length line the server never gets to): a server that
      // closed without unread bytes from us answers it with a reset.
      ssize_t n = ::send(fd_, "9", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return true;
    }
    return false;
  }

 private:
  static int remaining_ms(Clock::time_point deadline) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return static_cast<int>(std::max<long long>(0, left));
  }
  bool readable(Clock::time_point deadline) {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, remaining_ms(deadline)) > 0;
  }

  int fd_;
  std::string pending_;  // read but not yet returned
};

}  // namespace testing_support
