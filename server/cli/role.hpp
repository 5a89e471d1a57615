#pragma once
// A hot standby's process (exchange-server --standby): what cli::serve runs instead of waiting
// for the writer lock.
//
//   queue for the writer lock (without waiting: PostgreSQL hands it over the moment the
//   holder's session ends); load the state as a restart does and follow the journal (the
//   binary's Follower); serve on the trading port from the start, answering every request
//   with the standby error (serving::ReplyError::Standby), /healthz 503 with the lag;
//   meanwhile end the holder's lock session once its lease has expired (a paused server);
//   once the lock is ours: bump the writer epoch (the old holder can append nothing more),
//   let the Follower replay the journal's tail and build the Service from its state, start it,
//   and hand it the trading port. Each step is logged with its time.
//
// The trading port is bound and answered while standby rather than left closed: a client gets
// a definite "nothing was applied, this is the standby" at once (as it would get "connection
// refused" from a closed port, and unlike a bound port that does not accept, where it would
// wait), the port is held from the start so a takeover cannot fail to bind it, and connections
// (persistent sessions too) are served by the same listener the moment it takes over.
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "cli/serve.hpp"
#include "leadership/writer_lock.hpp"
#include "util/stop_flag.hpp"

namespace cli {

// What a binary that can stand by provides: its engine, kept up to date from the journal, and
// the Service it becomes.
class Follower {
 public:
  virtual ~Follower() = default;
  // Loads the state (retrying while PostgreSQL cannot be read); false if a stop came first.
  virtual bool load() = 0;
  // Follows the journal.
  virtual void start() = 0;
  virtual void stop() = 0;
  // The writer epoch `epoch` is ours: the Service, built from the state once it has replayed
  // the journal's end, not started yet. Throws if PostgreSQL could not be read (call again).
  virtual std::unique_ptr<Service> take_over(std::int64_t epoch,
                                             std::function<bool()> lease_valid) = 0;
  // /healthz while standby (never healthy: it serves nothing), with the lag.
  virtual app::Health::Status health() = 0;
  // For the log: what was loaded; what it did, if it never took over.
  virtual std::string loaded() = 0;
  virtual std::string summary() = 0;
};

// What a Follower is built from.
struct FollowerStartup {
  const ServeOptions& options;  // options.serving.db with the connection bounds applied
  app::Shutdown& shutdown;
  app::Metrics& metrics;
};

// Answers the standby error until it is given the active Service's handler.
class RoleHandler final : public serving::Handler {
 public:
  explicit RoleHandler(app::Metrics& metrics);
  void handle(std::string_view payload, const auth::Caller& caller, Reply done) override;
  void activate(serving::Handler& active) { active_.store(&active, std::memory_order_release); }

 private:
  app::Metrics& metrics_;
  const std::string standby_reply_;
  std::atomic<serving::Handler*> active_{nullptr};
};

// The Service cli::serve runs for --standby: the standby, then the Service it became.
class StandbyRole final : public Service {
 public:
  // Queues for the writer lock and loads the state. Throws if PostgreSQL cannot be asked, or
  // if a stop was requested before the state was loaded.
  StandbyRole(const ServeOptions& options, const MakeFollower& follow, app::Shutdown& shutdown,
              app::Metrics& metrics);
  ~StandbyRole() override;

  serving::Handler& handler() override { return handler_; }
  void fence(const std::string& why) override;
  void start() override;
  void abandon() override;
  void stop(bool forced) override;
  app::Health::Status health(bool stopping) override;
  std::string loaded() override;
  std::string summary() override;

 private:
  using Clock = std::chrono::steady_clock;
  // The takeover thread: waits for the lock (ending an expired holder's session), then takes
  // over.
  void run();
  bool wait_for_lock();
  void take_over(Clock::time_point granted);
  Service* active();

  const ServeOptions& options_;
  app::Shutdown& shutdown_;
  app::Metrics& metrics_;
  util::StopFlag stopping_;
  std::unique_ptr<leadership::WriterLock> lock_;
  std::unique_ptr<Follower> follower_;
  RoleHandler handler_;
  std::mutex mutex_;
  std::unique_ptr<Service> active_;  // under mutex_; set once
  std::string fenced_early_;         // under mutex_: fenced before active_ was set
  std::atomic<bool> taking_over_{false};
  std::thread thread_;
};

}  // namespace cli
