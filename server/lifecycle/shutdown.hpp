#pragma once
// A bounded shutdown. The first SIGINT or SIGTERM raises the stop flag (retry loops end) and
// runs the "stop accepting" action; in-flight requests then get a grace period to commit. If
// they have not all been answered by then, the "give up" action fails the rest (the process
// will exit 3 instead of 0), and if even that does not end serving within a few seconds the
// process exits 3 at once: a silent database or a stuck connection never keeps it alive.
//
// SIGHUP is taken by the same thread and runs the "reload" action (the principals file), and
// serving goes on. One that comes before the actions are set (while the server waits for its
// database or loads its state) is kept, and the reload runs when they are set, before the
// first connection is served; block_signals() first thing in main keeps one that comes even
// before the Shutdown exists (while the settings are read) from ending the process.
//
// step_down() starts the same sequence from inside the process, for a server that another one
// took over from (fenced): it then exits kSteppedDown whatever else happens.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "util/stop_flag.hpp"

namespace app {

class Shutdown {
 public:
  // Exit status when requests had to be failed (or the process had to be ended) at shutdown.
  static constexpr int kNotDrained = 3;
  // Exit status of a server that stepped down because another took over its database.
  static constexpr int kSteppedDown = 4;

  // Blocks SIGINT, SIGTERM and SIGHUP in the calling thread: they stay pending until a
  // Shutdown takes them.
  static void block_signals();
  // Blocks SIGINT, SIGTERM and SIGHUP in the calling thread, so every thread started later inherits
  // the mask; call it in main before starting any. `hard_margin`: how long after the grace
  // period the process may still take before it is ended.
  explicit Shutdown(std::chrono::milliseconds grace,
                    std::chrono::milliseconds hard_margin = std::chrono::seconds(5));
  ~Shutdown();
  Shutdown(const Shutdown&) = delete;
  Shutdown& operator=(const Shutdown&) = delete;

  // Raised at the first signal.
  const util::StopFlag& stop_flag() const { return stop_; }
  // The actions, set once everything they touch exists. If a signal came first, on_signal
  // runs at once; if a SIGHUP came first, on_reload does. `on_reload` runs at each SIGHUP
  // until the first stop signal.
  void set_actions(std::function<void()> on_signal, std::function<void()> on_grace_over,
                   std::function<void()> on_reload = nullptr);
  // Serving is over: no action runs any more (call before what they touch is destroyed).
  void finished();
  // Whether a SIGHUP came before the reload action was set (it runs when it is).
  bool reload_pending() const;
  // Whether the grace period ran out with requests still waiting.
  bool forced() const { return forced_.load(); }
  // Stop as after a signal, because another server took over the database. Any thread; it
  // only wakes the shutdown thread (within 200 ms).
  void step_down();
  bool stepped_down() const { return stepped_down_.load(); }

 private:
  void run();
  // SIGHUP: the reload action, if serving.
  void reload();

  std::chrono::milliseconds grace_, hard_margin_;
  sigset_t signals_;
  util::StopFlag stop_;
  mutable std::mutex mutex_;  // held while an action runs, so finished() waits for it
  std::condition_variable wake_;
  std::function<void()> on_signal_, on_grace_over_, on_reload_;
  bool signalled_ = false, finished_ = false, destroying_ = false;
  bool reload_pending_ = false;  // a SIGHUP came before on_reload was set
  std::atomic<bool> forced_{false};
  std::atomic<bool> stepped_down_{false};
  std::thread thread_;
};

}  // namespace app
