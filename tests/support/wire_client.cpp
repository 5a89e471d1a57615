#include "support/wire_client.hpp"

#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <stdexcept>

#include "support/loopback.hpp"

namespace testing_support {
namespace {

int connect_to(unsigned short port) {
  int fd = connect_loopback(port);
  // Tests never hang on a silent server.
  timeval tv{60, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

void send_all(int fd, const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) throw std::runtime_error("send failed");
    sent += static_cast<std::size_t>(n);
  }
}

std::string read_to_eof(int fd) {
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0) throw std::runtime_error("no reply (timeout or error)");
    if (n == 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
  }
}

}  // namespace

std::string send_raw(unsigned short port, const std::string& bytes) {
  int fd = connect_to(port);
  try {
    send_all(fd, bytes);
    ::shutdown(fd, SHUT_WR);  // nothing more to send: a short request is cut off at once
    std::string reply = read_to_eof(fd);
    ::close(fd);
    return reply;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

std::string send_request(unsigned short port, const std::string& xml) {
  return send_raw(port, std::to_string(xml.size()) + "\n" + xml);
}

Session::Session(unsigned short port) : fd_(connect_to(port)) {
  send_all(fd_, "EXCHANGE-SESSION 1\n");
  std::string ack = read_line();
  if (ack != "EXCHANGE-SESSION 1 OK") throw std::runtime_error("session refused: " + ack);
}

Session::~Session() { ::close(fd_); }

std::string Session::request(const std::string& xml) {
  send_all(fd_, std::to_string(xml.size()) + "\n" + xml);
  return read_exact(std::stoul(read_line()));
}

std::string Session::read_line() {
  for (;;) {
    auto nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    char buf[8192];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) throw std::runtime_error("session closed while reading a line");
    buffer_.append(buf, static_cast<std::size_t>(n));
  }
}

std::string Session::read_exact(std::size_t size) {
  while (buffer_.size() < size) {
    char buf[8192];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) throw std::runtime_error("session closed mid-reply");
    buffer_.append(buf, static_cast<std::size_t>(n));
  }
  std::string out = buffer_.substr(0, size);
  buffer_.erase(0, size);
  return out;
}

}  // namespace testing_support
