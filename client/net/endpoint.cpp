#include "net/endpoint.hpp"

#include <netdb.h>

#include <cstring>
#include <stdexcept>

#include "net/errors.hpp"

namespace exch::net {

void split_host_port(const std::string& text, std::uint16_t default_port, std::string& host,
                     std::uint16_t& port) {
  port = default_port;
  std::string port_text;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string::npos) throw std::invalid_argument("bad address: " + text);
    host = text.substr(1, close - 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') throw std::invalid_argument("bad address: " + text);
      port_text = text.substr(close + 2);
    }
  } else {
    auto colon = text.rfind(':');
    if (colon != std::string::npos && text.find(':') == colon) {
      host = text.substr(0, colon);
      port_text = text.substr(colon + 1);
    } else {
      host = text;
    }
  }
  if (host.empty()) throw std::invalid_argument("missing host in: " + text);
  if (!port_text.empty()) {
    unsigned long value = 0;
    for (char c : port_text) {
      if (c < '0' || c > '9' || value > 65535) throw std::invalid_argument("bad port in: " + text);
      value = value * 10 + static_cast<unsigned long>(c - '0');
    }
    if (value == 0 || value > 65535) throw std::invalid_argument("bad port in: " + text);
    port = static_cast<std::uint16_t>(value);
  }
}

Endpoint Endpoint::resolve(const std::string& host, std::uint16_t port) {
  Endpoint e;
  e.host_ = host;
  e.port_ = port;
  e.name_ =
      (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  std::string service = std::to_string(port);
  int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &result);
  if (rc != 0) throw NetError("cannot resolve " + e.name_ + ": " + ::gai_strerror(rc));
  for (addrinfo* ai = result; ai != nullptr; ai = ai->ai_next) {
    Address a;
    std::memcpy(&a.storage, ai->ai_addr, ai->ai_addrlen);
    a.length = static_cast<socklen_t>(ai->ai_addrlen);
    a.family = ai->ai_family;
    e.addresses_.push_back(a);
  }
  ::freeaddrinfo(result);
  if (e.addresses_.empty()) throw NetError("no address for " + e.name_);
  return e;
}

}  // namespace exch::net
