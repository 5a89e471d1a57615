#pragma once
// One connection served by one thread with blocking reads (bounded by the read timeout).
// Used by the thread-per-client and thread-per-request models.
#include <chrono>
#include <functional>
#include <string>

#include "net/framing.hpp"

namespace net {

class BlockingConnection {
 public:
  BlockingConnection(int fd, const ConnectionLimits& limits);
  ~BlockingConnection();
  BlockingConnection(const BlockingConnection&) = delete;
  BlockingConnection& operator=(const BlockingConnection&) = delete;

  // Reads the next request. False when the connection is done (EOF, timeout, bad framing; a
  // framing error has already been answered).
  bool read_request(std::string& payload);
  // Sends a reply, framed for the connection's mode. False if the peer is gone.
  bool send_reply(std::string xml);
  bool persistent() const { return persistent_; }
  int fd() const { return fd_; }

 private:
  bool send_all(const std::string& bytes);

  int fd_;
  FrameReader reader_;
  std::chrono::milliseconds read_timeout_;
  bool persistent_ = false;
  bool served_one_ = false;
};

// Serves a whole connection: each request through `handle`, until the peer or the protocol
// ends it.
void serve_blocking(BlockingConnection& conn,
                    const std::function<std::string(const std::string&)>& handle);

}  // namespace net
