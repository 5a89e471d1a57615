#include "auth/address_group.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <array>
#include <cstring>

namespace auth {
namespace {

std::string ipv4_group(const in_addr& addr) {
  if ((ntohl(addr.s_addr) >> 24) == 127) return std::string(kLoopbackGroup);
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &addr, text, sizeof text);
  return text;
}

std::string ipv6_group(const in6_addr& addr) {
  if (IN6_IS_ADDR_LOOPBACK(&addr)) return std::string(kLoopbackGroup);
  if (IN6_IS_ADDR_V4MAPPED(&addr)) {
    in_addr v4{};
    std::memcpy(&v4, addr.s6_addr + 12, sizeof v4);
    return ipv4_group(v4);
  }
  in6_addr prefix{};
  std::memcpy(prefix.s6_addr, addr.s6_addr, 8);  // the /64: the rest stays zero
  char text[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET6, &prefix, text, sizeof text);
  return std::string(text) + "/64";
}

}  // namespace

std::string address_group(std::string_view ip) {
  const std::string text(ip);
  in_addr v4{};
  if (::inet_pton(AF_INET, text.c_str(), &v4) == 1) return ipv4_group(v4);
  in6_addr v6{};
  if (::inet_pton(AF_INET6, text.c_str(), &v6) == 1) return ipv6_group(v6);
  return text;
}

}  // namespace auth
