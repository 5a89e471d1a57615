// Fake exchange servers for the client's tests: plain TCP on 127.0.0.1, one thread, a
// function per connection. What they write and read is up to each test.
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "net/connect_options.hpp"
#include "support/loopback.hpp"

namespace client_test {

// Accepts `connections` connections on 127.0.0.1, one after the other, and runs
// `serve(fd, i)` for each in a thread.
class OneShotServer {
 public:
  explicit OneShotServer(std::function<void(int)> serve)
      : OneShotServer([serve](int fd, int) { serve(fd); }, 1) {}
  OneShotServer(std::function<void(int, int)> serve, int connections) {
    listen_fd_ = testing_support::listen_loopback(port_, 4);
    thread_ = std::thread([this, serve, connections] {
      for (int i = 0; i < connections; ++i) {
        int fd = ::accept(listen_fd_, nullptr, nullptr);
        if (fd < 0) return;
        serve(fd, i);
        ::close(fd);
      }
    });
  }
  ~OneShotServer() {
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    thread_.join();
  }
  std::uint16_t port() const { return port_; }

 private:
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

inline std::string read_line(int fd) {
  std::string line;
  char c;
  while (::read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

inline std::string read_n(int fd, std::size_t n) {
  std::string s(n, '\0');
  std::size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd, &s[got], n - got);
    if (r <= 0) break;
    got += static_cast<std::size_t>(r);
  }
  s.resize(got);
  return s;
}

// Runs on the fake server's thread: no Catch assertions here (not thread-safe);
// a short write shows up as a failure on the client side.
inline void write_str(int fd, const std::string& s) {
  std::size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

inline exch::net::Timeouts short_timeouts() {
  exch::net::Timeouts t;
  t.connect = std::chrono::milliseconds(1000);
  t.read = std::chrono::milliseconds(300);
  return t;
}

}  // namespace client_test
