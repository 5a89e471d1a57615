#include "bench/executor.hpp"

#include <system_error>

namespace exch::bench {

Targets::Targets(const std::vector<std::pair<std::string, std::uint16_t>>& host_ports,
                 net::Timeouts timeouts, bool persistent)
    : timeouts_(timeouts), persistent_(persistent) {
  for (const auto& [host, port] : host_ports) {
    endpoints_.push_back(std::make_unique<net::Endpoint>(net::Endpoint::resolve(host, port)));
    pools_.push_back(std::make_unique<net::SessionPool>(*endpoints_.back(), timeouts_));
  }
}

std::size_t Targets::sessions_opened() const {
  std::size_t n = 0;
  for (const auto& p : pools_) n += p->opened();
  return n;
}

TargetResult Targets::exchange(std::size_t t, const std::string& xml, const TimeBase& tb,
                               std::unique_ptr<net::Session>* held) {
  TargetResult r;
  try {
    if (persistent_ && held != nullptr) {
      // A session that failed is closed (unusable): open a new one.
      if (!*held || !(*held)->usable()) *held = pools_[t]->acquire();
      r.body = (*held)->request(xml);
    } else if (persistent_) {
      auto session = pools_[t]->acquire();
      r.body = session->request(xml);
      pools_[t]->release(std::move(session));
    } else {
      r.body = net::request_once(*endpoints_[t], xml, timeouts_);
    }
    r.ok = true;
  } catch (const net::SessionUnsupported& e) {
    r.fatal = true;
    r.error = e.what();
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  r.end_ns = tb.now_ns();
  return r;
}

void Targets::release(std::size_t t, std::unique_ptr<net::Session> session) {
  pools_[t]->release(std::move(session));
}

std::size_t Targets::close_idle_sessions() {
  std::size_t n = 0;
  for (auto& p : pools_) n += p->close_idle();
  return n;
}

SessionMeter::SessionMeter(Targets& targets)
    : targets_(targets),
      closed_(targets.close_idle_sessions()),
      before_(targets.sessions_opened()) {}

void Targets::preflight() {
  for (std::size_t t = 0; t < size(); ++t) {
    if (persistent_) {
      pools_[t]->release(pools_[t]->acquire());
    } else {
      net::Connection c = net::Connection::open(*endpoints_[t], timeouts_.connect);
      c.close();
    }
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
