#pragma once
// Reading a server's admin port (--admin-port) in tests: one HTTP GET, and one series of a
// Prometheus exposition.
#include <string>

#include "support/wire_client.hpp"

namespace testing_support {

struct HttpReply {
  int status = 0;  // 0: no answer (closed, reset or timed out)
  std::string body;
};

inline HttpReply http_get(unsigned short port, const std::string& path) {
  std::string raw;
  try {
    raw =
        send_raw(port, "GET " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
  } catch (const std::exception&) {
    return {};
  }
  HttpReply reply;
  if (raw.rfind("HTTP/1.1 ", 0) == 0) reply.status = std::stoi(raw.substr(9, 3));
  auto body = raw.find("\r\n\r\n");
  if (body != std::string::npos) reply.body = raw.substr(body + 4);
  return reply;
}

// The value of one series ("name{labels}") in an exposition, or -1 if absent.
inline double series(const std::string& text, const std::string& name) {
  auto at = text.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + name.size() + 2));
}

// The series' value now, scraped from the admin port; -1 if absent.
inline double scrape(unsigned short admin_port, const std::string& name) {
  return series(http_get(admin_port, "/metrics").body, name);
}

}  // namespace testing_support
