#include "net/peer.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <string>

namespace net {

auth::Peer peer_of(int fd, bool tls) {
  auth::Peer peer;
  peer.tls = tls;
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      addr.ss_family != AF_INET) {
    peer.address = peer.ip = "(peer gone)";
    return peer;
  }
  const auto& in = reinterpret_cast<const sockaddr_in&>(addr);
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &in.sin_addr, text, sizeof text);
  peer.ip = text;
  peer.address = peer.ip + ":" + std::to_string(ntohs(in.sin_port));
  // 127.0.0.0/8: the listener is IPv4 only (net/listener.cpp).
  peer.loopback = (ntohl(in.sin_addr.s_addr) >> 24) == 127;
  return peer;
}

}  // namespace net
