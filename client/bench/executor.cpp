#include "bench/executor.hpp"

#include <system_error>
#include <thread>

#include "net/failover.hpp"

namespace exch::bench {

Targets::Targets(const std::vector<HostPort>& host_ports, net::ConnectOptions connect,
                 bool persistent)
    : connect_(std::move(connect)), persistent_(persistent) {
  for (const auto& hp : host_ports) add_target({hp});
}

std::unique_ptr<Targets> Targets::failover(const std::vector<HostPort>& servers,
                                           net::ConnectOptions connect, bool persistent,
                                           std::chrono::milliseconds wait) {
  std::unique_ptr<Targets> t(new Targets(std::move(connect), persistent));
  t->add_target(servers);
  t->failover_wait_ = wait;
  return t;
}

void Targets::add_target(const std::vector<HostPort>& servers) {
  auto target = std::make_unique<Target>();
  for (const auto& [host, port] : servers) {
    target->servers.push_back(std::make_unique<net::Endpoint>(net::Endpoint::resolve(host, port)));
    target->pools.push_back(std::make_unique<net::SessionPool>(*target->servers.back(), connect_));
  }
  targets_.push_back(std::move(target));
}

const net::Endpoint& Targets::endpoint(std::size_t t) const {
  const Target& target = *targets_[t];
  return *target.servers[target.current.load() % target.servers.size()];
}

std::string Targets::name(std::size_t t) const {
  std::string out;
  for (const auto& s : targets_[t]->servers) out += (out.empty() ? "" : ",") + s->name();
  return out;
}

std::size_t Targets::sessions_opened() const {
  std::size_t n = 0;
  for (const auto& target : targets_)
    for (const auto& p : target->pools) n += p->opened();
  return n;
}

std::string Targets::attempt(Target& target, std::size_t s, const std::string& xml,
                             std::unique_ptr<net::Session>* held) {
  net::SessionPool& pool = *target.pools[s];
  if (persistent_ && held != nullptr) {
    // A session that failed is closed (unusable), and one to a server passed over is
    // dropped: open a new one.
    if (!*held || !(*held)->usable() || &(*held)->endpoint() != target.servers[s].get())
      *held = pool.acquire();
    return (*held)->request(xml);
  }
  if (persistent_) {
    auto session = pool.acquire();
    std::string body = session->request(xml);
    pool.release(std::move(session));
    return body;
  }
  return net::request_once(*target.servers[s], xml, connect_);
}

void Targets::pass_over(Target& target, std::size_t from) {
  std::size_t expected = from;
  target.current.compare_exchange_strong(expected, (from + 1) % target.servers.size());
}

TargetResult Targets::exchange(std::size_t t, const std::string& xml, const TimeBase& tb,
                               std::unique_ptr<net::Session>* held) {
  TargetResult r;
  Target& target = *targets_[t];
  const bool several = target.servers.size() > 1;
  const auto deadline = Clock::now() + failover_wait_;
  std::size_t tried = 0, logons_refused = 0;
  for (;;) {
    const std::size_t s = target.current.load() % target.servers.size();
    try {
      r.body = attempt(target, s, xml, held);
      r.ok = true;
      r.error.clear();
      // A standby (or a server stepping down) refused it whole: nothing applied, try the next.
      if (!several || !net::refused_as_not_serving(r.body)) break;
      pass_over(target, s);
    } catch (const net::SessionUnsupported& e) {
      r.ok = false;
      r.fatal = true;
      r.error = e.what();
      break;
    } catch (const net::NoReply& e) {
      // Sent whole, no reply: it may have been applied, so it is not sent again.
      r.ok = false;
      r.error = several ? std::string("no reply (outcome unknown): ") + e.what() : e.what();
      if (several) pass_over(target, s);
      break;
    } catch (const net::LogonRefused& e) {
      r.ok = false;
      r.error = e.what();
      ++logons_refused;
      pass_over(target, s);
    } catch (const std::exception& e) {
      r.ok = false;
      r.error = e.what();
      if (!several) break;
      pass_over(target, s);
    }
    if (++tried >= target.servers.size()) {
      // Every server refused the logon: the run cannot succeed (and retrying a wrong key only
      // runs into the servers' logon throttle).
      if (logons_refused == tried) {
        r.fatal = true;
        break;
      }
      tried = logons_refused = 0;
      if (Clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  r.end_ns = tb.now_ns();
  return r;
}

net::TlsClient::Counts Targets::tls_handshakes() const {
  return connect_.tls ? connect_.tls->counts() : net::TlsClient::Counts{};
}

void Targets::release(std::size_t t, std::unique_ptr<net::Session> session) {
  if (!session) return;
  Target& target = *targets_[t];
  for (std::size_t s = 0; s < target.servers.size(); ++s)
    if (&session->endpoint() == target.servers[s].get())
      return target.pools[s]->release(std::move(session));
}

std::size_t Targets::close_idle_sessions() {
  std::size_t n = 0;
  for (auto& target : targets_)
    for (auto& p : target->pools) n += p->close_idle();
  return n;
}

SessionMeter::SessionMeter(Targets& targets)
    : targets_(targets),
      closed_(targets.close_idle_sessions()),
      before_(targets.sessions_opened()) {}

void Targets::preflight() {
  for (auto& target : targets_) {
    // With --servers, one that answers is enough (the others may be standbys, or down).
    std::string first_error;
    bool reached = false;
    for (std::size_t s = 0; s < target->servers.size() && !reached; ++s) {
      try {
        if (persistent_) {
          target->pools[s]->release(target->pools[s]->acquire());
        } else {
          net::probe(*target->servers[s], connect_);
        }
        reached = true;
        target->current = s;
      } catch (const net::SessionUnsupported&) {
        throw;
      } catch (const net::NetError& e) {
        if (first_error.empty()) first_error = e.what();
      }
    }
    if (!reached) throw net::NetError(first_error);
  }
}

Executor::Mode executor_mode(bool spawn_per_request, std::size_t targets) {
  if (spawn_per_request) return Executor::Mode::Spawn;
  return targets == 1 ? Executor::Mode::Inline : Executor::Mode::Helpers;
}

Executor::Executor(Targets& targets, Mode mode, const TimeBase& tb)
    : targets_(targets), mode_(mode), tb_(tb), sessions_(targets.size()) {
  if (mode_ == Mode::Inline && targets_.size() != 1) mode_ = Mode::Helpers;
  if (mode_ == Mode::Helpers)
    for (std::size_t t = 0; t < targets_.size(); ++t)
      helpers_.emplace_back([this, t] { helper_loop(t); });
}

Executor::~Executor() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& h : helpers_) h.join();
  for (std::size_t t = 0; t < sessions_.size(); ++t)
    if (sessions_[t]) targets_.release(t, std::move(sessions_[t]));
}

void Executor::helper_loop(std::size_t t) {
  std::uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    const std::string& payload = (*payloads_)[t];
    TargetResult& result = (*results_)[t];
    lock.unlock();
    result = targets_.exchange(t, payload, tb_, &sessions_[t]);
    lock.lock();
    if (--pending_ == 0) done_cv_.notify_one();
  }
}

void Executor::run(const std::vector<std::string>& payloads, std::vector<TargetResult>& results) {
  const std::size_t n = targets_.size();
  results.assign(n, TargetResult{});
  switch (mode_) {
    case Mode::Inline:
      results[0] = targets_.exchange(0, payloads[0], tb_, &sessions_[0]);
      return;
    case Mode::Helpers: {
      std::unique_lock<std::mutex> lock(mutex_);
      payloads_ = &payloads;
      results_ = &results;
      pending_ = n;
      ++generation_;
      work_cv_.notify_all();
      done_cv_.wait(lock, [&] { return pending_ == 0; });
      return;
    }
    case Mode::Spawn: {
      std::vector<std::thread> threads;
      threads.reserve(n);
      for (std::size_t t = 0; t < n; ++t) {
        try {
          threads.emplace_back(
              [&, t] { results[t] = targets_.exchange(t, payloads[t], tb_, &sessions_[t]); });
        } catch (const std::system_error& e) {
          results[t].error = std::string("cannot start a thread: ") + e.what();
          results[t].end_ns = tb_.now_ns();
        }
      }
      for (auto& th : threads) th.join();
      return;
    }
  }
}

}  // namespace exch::bench
