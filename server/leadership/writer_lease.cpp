// The writer lock's lease (leadership/writer_lock.hpp): the holder renews it, a standby ends the
// lock session of a holder whose lease ran out, and a new holder ends the sessions of an earlier
// writer that keep its epoch bump waiting.
#include <unistd.h>

#include "leadership/session_names.hpp"
#include "leadership/writer_lock.hpp"
#include "util/log.hpp"

namespace leadership {
namespace {

// The holder's lock session, terminated in the same statement that finds its lease expired:
// only the session pg_locks shows holding the writer lock, only if writer_lease names it
// (lock_pid: a holder that has just taken the lock and not yet bumped the epoch is not
// judged by its predecessor's lease) and its epoch is the current one, and only once
// expires_at has passed by PostgreSQL's clock, which the holder's renewals are also stamped
// with (no two machines' clocks are compared).
const char* kEndExpired = R"SQL(
SELECT l.pid, w.holder, w.epoch, (now() - w.expires_at)::text, pg_terminate_backend(l.pid)
FROM pg_locks l
JOIN writer_lease w ON w.lock_pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid = ($1::bigint >> 32)::oid AND l.objid = ($1::bigint & 4294967295)::oid
  AND w.epoch = (SELECT epoch FROM writer_epoch)
  AND w.expires_at < now()
)SQL";

// Renewed on the lock's own session, so lock_pid follows the session after the keeper took
// the lock again. No row: writer_lease names another epoch, another server took over.
const char* kRenew = R"SQL(
UPDATE writer_lease SET lock_pid = pg_backend_pid(), renewed_at = now(),
  expires_at = now() + $2::bigint * interval '1 millisecond'
WHERE epoch = $1
RETURNING epoch
)SQL";

// The current epoch's lease, if it has not expired: how long it still runs.
const char* kLeaseLeft = R"SQL(
SELECT w.epoch, (w.expires_at - now())::text FROM writer_lease w
WHERE w.epoch = (SELECT epoch FROM writer_epoch) AND w.expires_at > now()
)SQL";

// $2: only sessions of this application_name, or '' for all.
const char* kEndBlockers = R"SQL(
SELECT a.pid, coalesce(a.application_name, ''), pg_terminate_backend(a.pid)
FROM pg_stat_activity a
WHERE a.pid = ANY (pg_blocking_pids($1::int)) AND ($2 = '' OR a.application_name = $2)
)SQL";

}  // namespace

LockConnection& WriterLock::watch() {
  if (!watch_ || !watch_->usable())
    watch_ = std::make_unique<LockConnection>(options_.conninfo, kWatchSession);
  return *watch_;
}

std::optional<std::string> WriterLock::end_expired_holder() {
  auto rows = watch().exec(kEndExpired, {std::to_string(kKey)}, deadline());
  if (rows.empty()) return std::nullopt;
  const auto& r = rows[0];
  return "the writer lock's holder (backend pid " + r.at(0).value_or("?") + ", writer epoch " +
         r.at(2).value_or("?") + ", " + r.at(1).value_or("?") + ") let its lease expire " +
         r.at(3).value_or("?") + " ago; its lock session was terminated" +
         (r.at(4).value_or("f") == "t" ? "" : " (PostgreSQL refused: it may be gone already)");
}

std::optional<std::string> WriterLock::hold_back_queueing() {
  LockConnection& conn = watch();
  if (holder(conn)) return std::nullopt;  // held again: queue behind it
  std::vector<LockConnection::Row> rows;
  try {
    rows = conn.exec(kLeaseLeft, {}, deadline());
  } catch (const StatementRefused&) {
    return std::nullopt;  // no schema yet: no server ever held it
  }
  if (rows.empty()) return std::nullopt;  // no lease runs: the lock is for the taking
  return "the writer lock is free but writer epoch " + rows[0].at(0).value_or("?") +
         "'s lease runs " + rows[0].at(1).value_or("?") +
         " more: its holder lost its session too and is taking the lock back";
}

std::optional<std::string> WriterLock::renew_lease() {
  const auto sent = state_.clock().now();
  auto rows = conn_->exec(kRenew, {std::to_string(epoch()), std::to_string(options_.lease.count())},
                          deadline(), &stopping_);
  if (rows.empty()) {
    std::int64_t now = 0;
    const std::string stored = stored_epoch(*conn_, &now);
    return "another server took over the database (its lease names another writer; " + stored +
           "; ours was epoch " + std::to_string(epoch()) + ")";
  }
  state_.lease_renewed(sent);
  return std::nullopt;
}

std::string WriterLock::end_blockers(int pid, const std::string& application_name) {
  std::string ended;
  try {
    for (const auto& r :
         watch().exec(kEndBlockers, {std::to_string(pid), application_name}, deadline()))
      ended += (ended.empty() ? "" : ", ") + std::string("backend pid ") + r.at(0).value_or("?") +
               " (application_name " + r.at(1).value_or("''") + ")";
  } catch (const std::exception& e) {
    EXCHANGE_LOG(warn) << "could not end the sessions keeping the writer epoch's bump waiting: "
                       << e.what();
  }
  return ended;
}

}  // namespace leadership
