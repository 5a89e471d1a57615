// Where a server is: host:port, resolved once.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <vector>

namespace exch::net {

// host:port resolved once (getaddrinfo), so benchmarks do not resolve per request.
class Endpoint {
 public:
  static Endpoint resolve(const std::string& host, std::uint16_t port);
  const std::string& name() const { return name_; }
  // As the user named it (no brackets around an IPv6 address): what TLS verifies.
  std::string host() const { return host_; }
  std::uint16_t port() const { return port_; }

  struct Address {
    sockaddr_storage storage{};
    socklen_t length = 0;
    int family = 0;
  };
  const std::vector<Address>& addresses() const { return addresses_; }

 private:
  std::string host_;
  std::uint16_t port_ = 0;
  std::string name_;
  std::vector<Address> addresses_;
};

// Splits "host:port" / "[v6]:port" / "host".
void split_host_port(const std::string& text, std::uint16_t default_port, std::string& host,
                     std::uint16_t& port);

}  // namespace exch::net
