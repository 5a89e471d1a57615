// Sends one request to every target (one server, or R replicas) concurrently,
// with the client threading model under study:
//   Inline  - the calling thread does the I/O (only for one target);
//   Helpers - pre-started helper threads, one living thread per replica;
//   Spawn   - a new thread per request and per target, joined afterwards.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "net/session.hpp"
#include "net/tls.hpp"

namespace exch::bench {

using Clock = std::chrono::steady_clock;

// Nanoseconds since the start of a repetition.
struct TimeBase {
  Clock::time_point origin = Clock::now();
  std::int64_t now_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - origin).count();
  }
  Clock::time_point at(std::int64_t ns) const { return origin + std::chrono::nanoseconds(ns); }
};

struct TargetResult {
  bool ok = false;
  bool fatal = false;  // no point going on: no session extension, or the logon refused
  std::string body;    // the reply XML
  std::string error;   // when !ok
  std::int64_t end_ns = 0;
};

class Targets {
 public:
  using HostPort = std::pair<std::string, std::uint16_t>;
  // One target per host:port (one server, or replicas).
  Targets(const std::vector<HostPort>& host_ports, net::ConnectOptions connect, bool persistent);
  // One target served by whichever of `servers` serves (--servers: an active server and its
  // standbys, client/net/failover.hpp for the rules). A request goes to the next server only
  // when none can have applied it; one without a reply is an error ("no reply: outcome
  // unknown") and is not resent. While none serves they are tried in turn for `wait`.
  static std::unique_ptr<Targets> failover(const std::vector<HostPort>& servers,
                                           net::ConnectOptions connect, bool persistent,
                                           std::chrono::milliseconds wait);
  std::size_t size() const { return targets_.size(); }
  // The target's server now (with --servers, the one that served last).
  const net::Endpoint& endpoint(std::size_t t) const;
  // Its name in reports: host:port, or the --servers list.
  std::string name(std::size_t t) const;
  bool persistent() const { return persistent_; }
  const net::ConnectOptions& connect_options() const { return connect_; }
  std::size_t sessions_opened() const;
  // TLS handshakes so far, and how many resumed a session (zero without TLS).
  net::TlsClient::Counts tls_handshakes() const;

  // One request/reply with target t; never throws. With persistent sessions,
  // `held` is the caller's own session to target t: opened on first use (or
  // after a failure) and kept, so one client is one connection; without it, a
  // session is borrowed from the shared pool for this request only.
  TargetResult exchange(std::size_t t, const std::string& xml, const TimeBase& tb,
                        std::unique_ptr<net::Session>* held = nullptr);
  // Hands a client's session back to the pool: reused by later requests of the
  // same repetition (open loop, thread per request); closed by the next
  // repetition's SessionMeter.
  void release(std::size_t t, std::unique_ptr<net::Session> session);
  // Closes the idle sessions of every target (those the preflight, the setup or an
  // earlier repetition handed back); returns how many.
  std::size_t close_idle_sessions();
  // Connects (TLS handshake, logon, and the session hello when persistent) to every target;
  // throws NetError (LogonRefused) or SessionUnsupported with a clear message.
  void preflight();

 private:
  // One target: one server, or (--servers) several of which one serves.
  struct Target {
    std::vector<std::unique_ptr<net::Endpoint>> servers;
    std::vector<std::unique_ptr<net::SessionPool>> pools;  // one per server
    std::atomic<std::size_t> current{0};                   // the server that served last
  };
  Targets(net::ConnectOptions connect, bool persistent)
      : connect_(std::move(connect)), persistent_(persistent) {}
  void add_target(const std::vector<HostPort>& servers);
  // One attempt at server `s` of target `t`; throws what net:: throws.
  std::string attempt(Target& target, std::size_t s, const std::string& xml,
                      std::unique_ptr<net::Session>* held);
  // Moves the target on from server `from` (unless another client did already).
  void pass_over(Target& target, std::size_t from);

  std::vector<std::unique_ptr<Target>> targets_;
  net::ConnectOptions connect_;
  bool persistent_;
  std::chrono::milliseconds failover_wait_{0};
};

// The persistent sessions of one repetition. Construct it right before the
// repetition: it closes the sessions left idle by the preflight, the setup or an
// earlier repetition, so that every client opens its own and opened() is the
// number of sessions the repetition opened: one per client that sent a request
// (per sender in the open loop), plus one per reconnection after a failure.
// (Without closing them, one client reused the preflight's session and 64
// clients showed "63 opened".)
class SessionMeter {
 public:
  explicit SessionMeter(Targets& targets);
  std::size_t opened() const { return targets_.sessions_opened() - before_; }
  std::size_t closed_before() const { return closed_; }

 private:
  Targets& targets_;
  std::size_t closed_ = 0;
  std::size_t before_ = 0;
};

class Executor {
 public:
  enum class Mode { Inline, Helpers, Spawn };
  Executor(Targets& targets, Mode mode, const TimeBase& tb);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // payloads[t] goes to target t; results[t] gets its outcome.
  void run(const std::vector<std::string>& payloads, std::vector<TargetResult>& results);

 private:
  void helper_loop(std::size_t t);

  Targets& targets_;
  Mode mode_;
  const TimeBase& tb_;

  std::mutex mutex_;
  std::condition_variable work_cv_, done_cv_;
  std::uint64_t generation_ = 0;
  std::size_t pending_ = 0;
  bool stop_ = false;
  const std::vector<std::string>* payloads_ = nullptr;
  std::vector<TargetResult>* results_ = nullptr;
  std::vector<std::thread> helpers_;
  // This client's persistent session to each target (slot t is only ever used
  // by the one thread talking to target t at a time).
  std::vector<std::unique_ptr<net::Session>> sessions_;
};

// The executor mode for a thread that issues requests one at a time.
Executor::Mode executor_mode(bool spawn_per_request, std::size_t targets);

}  // namespace exch::bench
