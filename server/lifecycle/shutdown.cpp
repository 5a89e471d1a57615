#include "lifecycle/shutdown.hpp"

#include <cerrno>
#include <cstdlib>
#include <ctime>

#include "util/log.hpp"

namespace app {

namespace {
sigset_t taken_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}
}  // namespace

void Shutdown::block_signals() {
  const sigset_t set = taken_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

Shutdown::Shutdown(std::chrono::milliseconds grace, std::chrono::milliseconds hard_margin)
    : grace_(grace), hard_margin_(hard_margin), signals_(taken_signals()) {
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
  thread_ = std::thread([this] { run(); });
}

Shutdown::~Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    destroying_ = finished_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Shutdown::set_actions(std::function<void()> on_signal, std::function<void()> on_grace_over,
                           std::function<void()> on_reload) {
  std::lock_guard<std::mutex> lock(mutex_);
  on_signal_ = std::move(on_signal);
  on_grace_over_ = std::move(on_grace_over);
  on_reload_ = std::move(on_reload);
  if (signalled_ && on_signal_) on_signal_();
  if (reload_pending_ && on_reload_ && !signalled_) {
    EXCHANGE_LOG(info) << "SIGHUP came while starting: reloading before serving";
    reload_pending_ = false;
    on_reload_();
  }
}

void Shutdown::finished() {
  std::lock_guard<std::mutex> lock(mutex_);
  finished_ = true;
  on_signal_ = nullptr;
  on_grace_over_ = nullptr;
  on_reload_ = nullptr;
  wake_.notify_all();
}

bool Shutdown::reload_pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reload_pending_;
}

void Shutdown::step_down() { stepped_down_ = true; }

void Shutdown::reload() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (on_reload_) return on_reload_();
  if (finished_) return;  // serving is over: nothing left to reload for
  reload_pending_ = true;
  EXCHANGE_LOG(info) << "SIGHUP: not serving yet; the reload runs before the first connection "
                        "is served";
}

void Shutdown::run() {
  // sigtimedwait rather than sigwait: the thread must also end when the server stops without
  // a signal (a start-up failure), and see a step_down() request.
  int sig = -1;
  while (sig < 0 && !stepped_down_) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (destroying_) return;
    }
    timespec tick{0, 200 * 1000 * 1000};
    sig = sigtimedwait(&signals_, nullptr, &tick);
    if (sig == SIGHUP) {
      reload();
      sig = -1;
    }
  }

  std::unique_lock<std::mutex> lock(mutex_);
  if (finished_) return;
  if (sig < 0)
    EXCHANGE_LOG(info) << "stepping down: no longer accepting; in-flight requests have "
                       << grace_.count() << " ms to finish";
  else
    EXCHANGE_LOG(info) << "signal " << sig << ": no longer accepting; in-flight requests have "
                       << grace_.count() << " ms to commit";
  signalled_ = true;
  stop_.request();
  if (on_signal_) on_signal_();
  if (wake_.wait_for(lock, grace_, [this] { return finished_; })) return;

  forced_ = true;
  EXCHANGE_LOG(warn) << "the grace period of " << grace_.count()
                     << " ms is over: requests still waiting get an error";
  if (on_grace_over_) on_grace_over_();
  if (wake_.wait_for(lock, hard_margin_, [this] { return finished_; })) return;
  EXCHANGE_LOG(error) << "still not stopped " << hard_margin_.count()
                      << " ms after the grace period; exiting now";
  std::_Exit(stepped_down_ ? kSteppedDown : kNotDrained);
}

}  // namespace app
