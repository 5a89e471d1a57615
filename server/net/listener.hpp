#pragma once
// The listening TCP socket. Blocking models accept from it with a short poll so they notice
// a stop; event-loop models hand its descriptor to Boost.Asio.
#include <chrono>
#include <cstdint>
#include <string>

namespace net {

class Listener {
 public:
  // Binds and listens; throws std::runtime_error with the reason (e.g. port in use).
  Listener(const std::string& bind_address, std::uint16_t port);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // A connected socket, or -1 if none arrived within `wait`.
  int accept_for(std::chrono::milliseconds wait);
  int fd() const { return fd_; }
  // Hands the descriptor over (to an Asio acceptor); the Listener no longer closes it.
  int release();
  std::uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

}  // namespace net
