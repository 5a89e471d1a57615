#pragma once
// A minimal client of the wire protocol for tests: frames a request, reads the reply.
#include <string>

namespace testing_support {

// One request on its own connection (the protocol's default); returns the whole reply.
std::string send_request(unsigned short port, const std::string& xml);
// Sends raw bytes and reads until the server closes (for framing tests).
std::string send_raw(unsigned short port, const std::string& bytes);

// A persistent session (the opt-in extension): many requests on one connection.
class Session {
 public:
  explicit Session(unsigned short port);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  std::string request(const std::string& xml);

 private:
  std::string read_line();
  std::string read_exact(std::size_t n);
  int fd_;
  std::string buffer_;
};

}  // namespace testing_support
