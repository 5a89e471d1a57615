// Taking the writer lock at start-up, naming whoever holds it, and the epoch bump.
#include "leadership/writer_lock.hpp"

#include <unistd.h>

#include "leadership/session_names.hpp"
#include "util/log.hpp"

namespace leadership {
namespace {

const std::string kKeyText = std::to_string(WriterLock::kKey);

// The granted advisory lock on kKey in this database (pg_locks splits a bigint key into
// classid, the high half, and objid, the low half, with objsubid 1), and who holds it.
const char* kHolder = R"SQL(
SELECT a.pid, a.application_name, host(a.client_addr), a.backend_start::text
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid = ($1::bigint >> 32)::oid AND l.objid = ($1::bigint & 4294967295)::oid
)SQL";

constexpr const char* kLockNotAvailable = "55P03";  // lock_timeout expired

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

}  // namespace

std::string LockHolder::describe() const {
  return "backend pid " + std::to_string(pid) + " (application_name " +
         (application_name.empty() ? "''" : application_name) + ", client " +
         (client_addr.empty() ? "local socket" : client_addr) + ", backend start " + backend_start +
         ")";
}

WriterLock::WriterLock(Options options, const util::StopFlag* stop)
    : options_(std::move(options)), state_(options_.lease) {
  conn_ = std::make_unique<LockConnection>(options_.conninfo, kLockSession);
  const long long wait_ms = options_.wait.count();
  bool taken;
  if (wait_ms <= 0) {
    taken =
        conn_->exec("SELECT pg_try_advisory_lock($1)", {kKeyText}, deadline(), stop).at(0).at(0) ==
        "t";
  } else {
    if (auto h = holder(*conn_))
      EXCHANGE_LOG(warn) << "the writer lock of this database is held by " << h->describe()
                         << "; waiting up to " << wait_ms
                         << " ms for it (a previous server may still be exiting)";
    // Queued in PostgreSQL behind the holder rather than polling: the moment its session
    // ends the lock is ours, and the old holder cannot take it back first.
    conn_->exec("SET lock_timeout = " + std::to_string(wait_ms), {}, deadline(), stop);
    try {
      conn_->exec("SELECT pg_advisory_lock($1)", {kKeyText}, deadline() + options_.wait, stop);
      taken = true;
    } catch (const StatementRefused& e) {
      if (e.sqlstate != kLockNotAvailable) throw;
      taken = false;
    }
    if (taken) conn_->exec("SET lock_timeout = 0", {}, deadline(), stop);
  }
  if (!taken) {
    auto h = holder(*conn_);
    const std::string epoch = stored_epoch(*conn_);
    throw WriterLockHeld(
        "another server is writing this database: its writer lock is held by " +
        (h ? h->describe() : std::string("a session that has just ended")) +
        (epoch.empty() ? "" : "; writer_epoch: " + epoch) + " (waited " + std::to_string(wait_ms) +
        " ms, see --writer-lock-wait-ms). Stop that server first; if none is running, end "
        "the session: SELECT pg_terminate_backend(" +
        std::to_string(h ? h->pid : 0) + ")");
  }
  backend_ = backend_of(*conn_);
  state_.lock_granted();
}

WriterLock::WriterLock(Options options, Queue)
    : options_(std::move(options)), state_(options_.lease) {
  queue_again();
}

void WriterLock::queue_again() {
  if (conn_) state_.session_lost();
  granted_ = false;
  conn_ = std::make_unique<LockConnection>(options_.conninfo, kLockSession);
  backend_ = backend_of(*conn_);
  // Queued in PostgreSQL behind the holder: when its session ends the lock is ours at once.
  conn_->send("SELECT pg_advisory_lock($1)", {kKeyText});
}

bool WriterLock::granted_within(std::chrono::milliseconds wait) {
  if (!granted_ && conn_->result_within(wait)) {
    granted_ = true;
    state_.lock_granted();
  }
  return granted_;
}

WriterLock::~WriterLock() {
  stop_keeping();
  state_.release();
  conn_.reset();  // ends the session: the lock is released
}

std::int64_t WriterLock::begin_epoch() {
  const std::string holder = options_.program + " pid " + std::to_string(::getpid()) + " on " +
                             host_name() + ", lock backend pid " + std::to_string(backend_.pid);
  // The epoch, its lease and the projection's fence in one transaction: a standby never sees
  // the new epoch without the lease that protects it. Waits for an append of the previous
  // writer that is in flight (it holds writer_epoch's row FOR SHARE) and for its projection
  // write (it holds projection_position's): a bounded statement, but on a busy database give
  // it as long as the lock wait.
  const auto sent = state_.clock().now();
  const auto sent_steady = Steady::now();
  conn_->send(R"SQL(
WITH bumped AS (
  UPDATE writer_epoch SET epoch = epoch + 1, holder = $1, since = now() RETURNING epoch
), leased AS (
  UPDATE writer_lease SET epoch = (SELECT epoch FROM bumped), holder = $1,
    lock_pid = pg_backend_pid(), renewed_at = now(),
    expires_at = now() + $2::bigint * interval '1 millisecond'
), projection_fenced AS (
  UPDATE projection_position SET epoch = (SELECT epoch FROM bumped)
)
SELECT epoch FROM bumped
)SQL",
              {holder, std::to_string(options_.lease.count())});
  const auto deadline = sent_steady + options_.timeout + options_.wait;
  // The lock is ours, so whoever holds writer_epoch or projection_position is a writer that
  // lost it. A projection write holds projection_position from its first statement to its
  // commit (store/projection_sql.cpp), for most of the gather interval when spread: ended at
  // every check, since the journal has all it would write and this server writes it again (a
  // paused server's would hold the bump, and the rows it appended, for as long as it is
  // paused). Anything else, a journal append in flight, is given 500 ms to finish, and ended
  // at every check after that. At every check, because the bump waits on one row and then
  // the other, so what blocks it changes while it waits.
  const auto end = [this](const std::string& only) {
    const std::string ended = end_blockers(backend_.pid, only);
    if (!ended.empty())
      EXCHANGE_LOG(warn) << "the writer epoch's bump waited for sessions of an earlier writer; "
                            "terminated them: "
                         << ended;
  };
  std::optional<std::vector<LockConnection::Row>> rows;
  while (!(rows = conn_->result_within(std::chrono::milliseconds(50)))) {
    const auto now = Steady::now();
    if (now > deadline) {
      conn_.reset();
      throw std::runtime_error("bumping writer_epoch got no answer in time");
    }
    end(now - sent_steady > std::chrono::milliseconds(500) ? "" : kProjectorSession);
  }
  if (rows->empty() || !(*rows)[0].at(0))
    throw std::runtime_error("writer_epoch has no row: the schema was not applied");
  const std::int64_t epoch = state_.epoch_bumped(std::stoll(*(*rows)[0][0]), sent).epoch;
  EXCHANGE_LOG(info) << "took the writer lock (backend pid " << backend_.pid << "); writer epoch "
                     << epoch << ", lease " << options_.lease.count() << " ms";
  return epoch;
}

bool WriterLock::lease_valid() const { return state_.lease_valid(); }

std::optional<LockHolder> WriterLock::holder(LockConnection& conn) {
  auto rows = conn.exec(kHolder, {kKeyText}, deadline());
  if (rows.empty()) return std::nullopt;
  const auto& r = rows[0];
  return LockHolder{std::stoi(r.at(0).value_or("0")), r.at(1).value_or(""), r.at(2).value_or(""),
                    r.at(3).value_or("")};
}

std::string WriterLock::stored_epoch(LockConnection& conn, std::int64_t* epoch) {
  try {
    auto rows = conn.exec("SELECT epoch, holder, since::text FROM writer_epoch", {}, deadline());
    if (rows.empty()) return "";
    if (epoch) *epoch = std::stoll(rows[0].at(0).value_or("0"));
    return "epoch " + rows[0].at(0).value_or("?") + ", holder " + rows[0].at(1).value_or("?") +
           ", since " + rows[0].at(2).value_or("?");
  } catch (const StatementRefused&) {
    return "";  // no writer_epoch yet: no server ever started on this schema
  }
}

WriterLock::Backend WriterLock::backend_of(LockConnection& conn) {
  auto rows = conn.exec(
      "SELECT pid, backend_start::text FROM pg_stat_activity WHERE pid = pg_backend_pid()", {},
      deadline());
  if (rows.empty()) throw std::runtime_error("cannot see our own backend in pg_stat_activity");
  return Backend{std::stoi(rows[0].at(0).value_or("0")), rows[0].at(1).value_or("")};
}

}  // namespace leadership
