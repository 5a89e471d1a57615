// Several servers of which one serves: an active exchange and its standbys (issue 27). Each
// request goes to the server that serves, and a request is sent again elsewhere only when no
// server can have applied it:
//   - it never left whole (no connection, refused, no session): the next server is tried;
//   - a server answered that it does not serve ("Service unavailable: ...", the whole request
//     refused and nothing applied: a standby, a server that stepped down, one reloading or
//     stopping): the next server is tried;
//   - it left whole and no whole reply came back: its outcome is unknown. It is reported as
//     such and never resent (a resend could apply it twice); the next request goes to the
//     next server.
// Servers are tried in turn, starting with the one that served last, for up to `wait` (a
// takeover takes a moment: the standby must notice and take the writer lock).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "net/session.hpp"

namespace exch::net {

// Parses "host:port,host:port,..." (at least one) and resolves each; throws
// std::invalid_argument or NetError naming the bad one.
std::vector<std::unique_ptr<Endpoint>> resolve_servers(const std::string& list,
                                                       std::uint16_t default_port);

// True for a reply that refuses the whole request because this server does not serve now
// ("<results><error>Service unavailable: ..."): nothing of it was applied.
bool refused_as_not_serving(std::string_view reply);

class Failover {
 public:
  struct Options {
    ConnectOptions connect;  // timeouts, TLS, logon: for every server
    bool persistent = false;
    std::chrono::milliseconds wait{10000};  // finding a server that serves, per request
  };
  Failover(std::vector<std::unique_ptr<Endpoint>> servers, Options options);

  struct Answer {
    enum class Kind {
      Reply,        // `reply` holds the server's answer
      Unknown,      // sent, no reply: may or may not have been applied
      Unreachable,  // no server took it within `wait`: not applied
    };
    Kind kind = Kind::Unreachable;
    std::string reply;
    std::string error;                 // Unknown, Unreachable: why
    bool logon_refused = false;        // Unreachable: the last server tried refused the logon
    const Endpoint* server = nullptr;  // Reply, Unknown: where it went
  };
  // Throws SessionUnsupported (a server too old for --persistent); nothing else. A refused
  // logon is like an unreachable server: the next one is tried, and if none takes the request
  // the answer is Unreachable with "logon refused: why" as its error.
  Answer request(std::string_view xml);

  // Called with a line for the user each time a server is passed over (may be empty).
  void on_switch(std::function<void(const std::string&)> note) { note_ = std::move(note); }

 private:
  void next_server(const std::string& why);

  std::vector<std::unique_ptr<Endpoint>> servers_;
  Options options_;
  std::size_t current_ = 0;
  std::unique_ptr<Session> session_;  // persistent: to servers_[current_]
  std::function<void(const std::string&)> note_;
};

}  // namespace exch::net
