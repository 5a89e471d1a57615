#include "app/health.hpp"

#include <memory>

#include "store/database.hpp"
#include "util/log.hpp"

namespace app {
namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Health::Health(std::string conninfo, std::chrono::milliseconds db_timeout,
               std::chrono::milliseconds max_lag, std::chrono::milliseconds stale_after)
    : conninfo_(std::move(conninfo)),
      db_timeout_(db_timeout),
      max_lag_(max_lag),
      stale_after_(stale_after),
      last_answer_ns_(now_ns()) {}  // the state was just loaded from PostgreSQL

Health::~Health() { stop(); }

void Health::database_answered() { last_answer_ns_.store(now_ns(), std::memory_order_relaxed); }

void Health::start() {
  if (!pinger_.joinable()) pinger_ = std::thread([this] { ping_loop(); });
}

void Health::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (pinger_.joinable()) pinger_.join();
}

Health::Status Health::status(bool available, bool stopping, const Backlog& backlog) const {
  if (stopping) return {false, "shutting down"};
  if (!available)
    return {false,
            "reloading the state from PostgreSQL after a failed write; requests get "
            "'Service unavailable'"};
  auto silent = std::chrono::nanoseconds(now_ns() - last_answer_ns_.load());
  if (silent > stale_after_) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(silent).count();
    return {false, "PostgreSQL has not answered for " + std::to_string(ms) + " ms" +
                       (last_failure_.empty() ? "" : ": " + last_failure_)};
  }
  if (backlog.oldest_unprojected > max_lag_) {
    std::string why = "the projection is " + std::to_string(backlog.oldest_unprojected.count()) +
                      " ms behind (" + std::to_string(backlog.unprojected_rows) +
                      " rows waiting; --ready-max-lag-ms " + std::to_string(max_lag_.count()) + ")";
    if (backlog.projection_failures_in_a_row > 0) {
      std::string error = backlog.last_projection_error;
      for (char& c : error)
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
      why += "; its last " + std::to_string(backlog.projection_failures_in_a_row) +
             " writes failed: " + error;
    }
    return {false, why};
  }
  if (backlog.commit_stalled > max_lag_)
    return {false, "the group commit has been at one batch for " +
                       std::to_string(backlog.commit_stalled.count()) + " ms (--ready-max-lag-ms " +
                       std::to_string(max_lag_.count()) + ")"};
  return {true, "ok"};
}

void Health::ping_loop() {
  const auto period = std::chrono::seconds(1);
  std::unique_ptr<store::Database> db;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, period, [this] { return stopping_; })) {
    // Commits prove PostgreSQL answers; ping only when they have been quiet for a period.
    if (std::chrono::nanoseconds(now_ns() - last_answer_ns_.load()) < period) continue;
    lock.unlock();
    std::string failure;
    try {
      if (!db) db = std::make_unique<store::Database>(conninfo_, db_timeout_);
      db->ping();
      database_answered();
    } catch (const std::exception& e) {
      db.reset();
      failure = e.what();
    }
    lock.lock();
    if (failure != last_failure_ && !failure.empty())
      EXCHANGE_LOG(warn) << "health: PostgreSQL does not answer: " << failure;
    last_failure_ = failure;
  }
}

}  // namespace app
