#include "cli/role.hpp"

#include <algorithm>
#include <stdexcept>

#include "leadership/takeover.hpp"
#include "protocol/render.hpp"
#include "serving/reply_errors.hpp"
#include "store/batch_writer.hpp"
#include "util/log.hpp"

namespace cli {
namespace {

long long ms_between(std::chrono::steady_clock::time_point from,
                     std::chrono::steady_clock::time_point to) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}

}  // namespace

RoleHandler::RoleHandler(app::Metrics& metrics)
    : metrics_(metrics),
      standby_reply_(protocol::render_error(serving::error_text(serving::ReplyError::Standby))) {}

void RoleHandler::handle(std::string_view payload, const auth::Caller& caller, Reply done) {
  if (serving::Handler* active = active_.load(std::memory_order_acquire))
    return active->handle(payload, caller, std::move(done));
  metrics_.request_answered(app::Metrics::Root::Invalid, app::Outcome::Unavailable,
                            std::chrono::nanoseconds(0));
  done(standby_reply_);
}

StandbyRole::StandbyRole(const ServeOptions& options, const MakeFollower& follow,
                         app::Shutdown& shutdown, app::Metrics& metrics)
    : options_(options), shutdown_(shutdown), metrics_(metrics), handler_(metrics) {
  if (!follow) throw std::runtime_error("this program cannot run as a standby");
  // Queued first: if the active server dies while the state loads, the lock is ours already.
  for (int attempt = 1;; ++attempt) {
    try {
      lock_ = std::make_unique<leadership::WriterLock>(
          leadership::WriterLock::Options{options.serving.db, options.program,
                                          options.writer_lock_wait, options.db_timeout,
                                          options.lease},
          leadership::WriterLock::Queue{});
      break;
    } catch (const std::exception& e) {
      if (attempt >= std::max(1, options.db_wait_seconds) || shutdown.stop_flag().requested())
        throw;
      if (attempt == 1)
        EXCHANGE_LOG(warn) << "standby: cannot queue for the writer lock yet (" << e.what()
                           << "); retrying every second for up to --db-wait";
      shutdown.stop_flag().sleep_for(std::chrono::seconds(1));
    }
  }
  // Granted at once: no server holds the database, maybe none ever did. The lock is ours, so
  // the schema may be applied as any server does at start (the standby's load needs it); it
  // is never applied beside an active server, whose transactions could keep it waiting.
  if (lock_->granted_within(std::chrono::milliseconds(100))) {
    EXCHANGE_LOG(info) << "standby: no server holds the writer lock; applying the schema";
    auto setup = store::connect_with_retry(options.serving.db, options.db_wait_seconds,
                                           &shutdown.stop_flag(), options.db_timeout);
    setup->apply_schema(schema_sql(options.schema_path));
  }
  EXCHANGE_LOG(info) << "standby: queued for the writer lock; loading the state";
  follower_ = follow(FollowerStartup{options, shutdown, metrics});
  if (!follower_->load()) throw std::runtime_error("stopped while loading the state");
}

StandbyRole::~StandbyRole() {
  stopping_.request();
  if (thread_.joinable()) thread_.join();
  // The keeper calls fence(): it ends before what it touches.
  if (lock_) lock_->stop_keeping();
  active_.reset();
  follower_.reset();
}

void StandbyRole::start() {
  follower_->start();
  thread_ = std::thread([this] { run(); });
}

Service* StandbyRole::active() {
  std::lock_guard<std::mutex> lock(mutex_);
  return active_.get();
}

void StandbyRole::fence(const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (active_) return active_->fence(why);
  // Between the epoch bump and the Service: it is told once it exists.
  if (fenced_early_.empty()) fenced_early_ = why;
  shutdown_.step_down();
}

void StandbyRole::abandon() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (active_) active_->abandon();
}

void StandbyRole::stop(bool forced) {
  stopping_.request();
  if (thread_.joinable()) thread_.join();
  follower_->stop();
  if (Service* s = active()) s->stop(forced);
}

app::Health::Status StandbyRole::health(bool stopping) {
  if (Service* s = active()) return s->health(stopping);
  if (stopping) return {false, "stopping"};
  if (taking_over_) return {false, "standby: taking over"};
  return follower_->health();
}

std::string StandbyRole::loaded() {
  if (Service* s = active()) return s->loaded();
  return follower_->loaded();
}

std::string StandbyRole::summary() {
  if (Service* s = active()) return s->summary();
  return follower_->summary();
}

void StandbyRole::run() {
  if (!wait_for_lock()) return;
  take_over(Clock::now());
}

bool StandbyRole::wait_for_lock() {
  return leadership::wait_for_lock(
      *lock_, [this] { return stopping_.requested() || shutdown_.stop_flag().requested(); },
      stopping_);
}

void StandbyRole::take_over(Clock::time_point granted) {
  taking_over_ = true;
  EXCHANGE_LOG(warn) << "takeover: the writer lock is ours; taking over";
  std::int64_t epoch = 0;
  try {
    epoch = lock_->begin_epoch();
  } catch (const std::exception& e) {
    // The lock is ours but the database would not take the bump: leave the lock to another
    // standby (a supervisor restarts this one).
    EXCHANGE_LOG(error) << "takeover: bumping the writer epoch failed: " << e.what()
                        << "; stepping down";
    shutdown_.step_down();
    return;
  }
  const auto bumped = Clock::now();
  // From here on the old holder cannot append; a lost lock fences what this becomes.
  lock_->keep([this](const std::string& why) { fence(why); });
  std::unique_ptr<Service> service;
  std::string last_error;
  while (!service) {
    if (stopping_.requested() || shutdown_.stop_flag().requested()) return;
    try {
      leadership::WriterLock* lock = lock_.get();
      service = follower_->take_over(epoch, [lock] { return lock->lease_valid(); });
    } catch (const std::exception& e) {
      if (last_error != e.what())
        EXCHANGE_LOG(error) << "takeover: reading the journal's tail failed: " << e.what()
                            << "; retrying every 100 ms";
      last_error = e.what();
      stopping_.sleep_for(std::chrono::milliseconds(100));
    }
  }
  const auto built = Clock::now();
  service->start();
  Service* started = service.get();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    active_ = std::move(service);
    if (!fenced_early_.empty()) active_->fence(fenced_early_);
  }
  handler_.activate(started->handler());
  const auto serving = Clock::now();
  EXCHANGE_LOG(warn) << "takeover: serving as the active server (writer epoch " << epoch << ", "
                     << started->loaded() << ") " << ms_between(granted, serving)
                     << " ms after the writer lock came: epoch bump " << ms_between(granted, bumped)
                     << " ms, journal tail and hand-over " << ms_between(bumped, built)
                     << " ms, start " << ms_between(built, serving) << " ms";
  taking_over_ = false;
}

}  // namespace cli
