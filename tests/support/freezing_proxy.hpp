#pragma once
// A TCP relay between the server and PostgreSQL that can go silent the way a network
// partition does: freeze() stops relaying on every open connection without closing it (no
// FIN, no RST; the bytes just stop), while new connections are relayed as usual, refused, or
// swallowed (accepted, never answered) as set. One thread, plain sockets and poll.
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace testing_support {

class FreezingProxy {
 public:
  enum class NewConnections { Relay, Refuse, Swallow };

  // Relays 127.0.0.1:port() to target_host:target_port (an IPv4 address).
  FreezingProxy(std::string target_host, unsigned short target_port);
  ~FreezingProxy();
  FreezingProxy(const FreezingProxy&) = delete;
  FreezingProxy& operator=(const FreezingProxy&) = delete;

  unsigned short port() const { return port_; }
  // Stops relaying on every connection open now; returns how many were frozen. Takes effect
  // before it returns.
  int freeze();
  void set_new_connections(NewConnections mode);
  // Connections relayed now (not frozen).
  int relaying() const;

 private:
  struct Pair;
  void run();
  void wake();

  std::string target_host_;
  unsigned short target_port_;
  unsigned short port_ = 0;
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  mutable std::mutex mutex_;
  std::condition_variable done_;
  std::vector<std::unique_ptr<Pair>> pairs_;  // relay thread only
  std::vector<int> held_;                     // frozen or swallowed sockets, kept open
  NewConnections mode_ = NewConnections::Relay;
  int freeze_requests_ = 0, freezes_done_ = 0, last_frozen_ = 0, relaying_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

// Host and port of a postgresql://user@host:port/db URL, and the same URL pointed at another
// port on 127.0.0.1. False if `url` is not of that form.
bool split_database_url(const std::string& url, std::string& host, unsigned short& port);
std::string database_url_via(const std::string& url, unsigned short port);

}  // namespace testing_support
