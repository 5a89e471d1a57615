#pragma once
// One writer per database. A server takes the writer lock before it touches the database: a
// PostgreSQL session advisory lock on a connection of its own (application_name
// exchange-writer-lock), held for the life of the process. A second server on the same
// database waits for it in PostgreSQL's lock queue for a few seconds (a previous server may
// still be exiting), then refuses to start, naming the session that holds it.
//
// The lock alone cannot stop a server that has lost it from writing: its other connections
// do not know. So once it holds the lock, a server bumps writer_epoch (schema.sql) and every
// journal append checks, in the same statement, that the epoch is still its own (fencing:
// leadership/fencing.hpp); the same bump moves projection_position's epoch, which a projection
// write holds from its first statement to its commit. A new writer's bump waits for an append
// or projection write in flight, and one after the bump writes nothing: two servers can never
// interleave journal entries or projection writes.
//
// If the lock's session ends under a running server (PostgreSQL restarted, the connection was
// killed), the keeper takes the lock again, ending the old session first if it somehow still
// holds it. If another session has it by then, or the epoch moved on, that server is fenced.
// A server waiting at start-up is queued in PostgreSQL behind the holder, so when the holder's
// session ends it gets the lock before the old holder can take it back.
//
// A lease covers a holder that is alive to PostgreSQL but not working (SIGSTOP, a frozen VM):
// its session, and so the lock, would never end. The holder writes writer_lease (schema.sql)
// with the epoch and expires_at = now() + lease when it bumps the epoch, and the keeper renews
// it every lease/3. A standby (exchange-server --standby) queues for the lock without waiting
// (queue()) and, once the holder's lease has expired by PostgreSQL's clock, ends the holder's
// lock session (end_expired_holder()), which hands it the lock; its epoch bump then fences
// every later write of the old holder. Locally the holder counts its lease from the moment it
// sent the renewal (lease_valid()), so it never believes in a lease PostgreSQL holds expired.
//
// Each step (granted, bumped, renewed, session lost, retaken, lost to another) drives the state
// machine of leadership/state.hpp, which holds the fencing token and the lease and tells
// on_fenced once; this class is its PostgreSQL side.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "leadership/fencing.hpp"
#include "leadership/lock_connection.hpp"
#include "leadership/state.hpp"
#include "util/stop_flag.hpp"

namespace leadership {

// Start-up waited the whole --writer-lock-wait-ms and another session still held the lock.
struct WriterLockHeld : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A session holding the writer lock, as pg_locks and pg_stat_activity show it.
struct LockHolder {
  int pid = 0;
  std::string application_name, client_addr, backend_start;
  // "backend pid 4711 (application_name exchange-writer-lock, client 10.0.0.5, backend start
  // 2024-01-01 12:00:00+00)"
  std::string describe() const;
};

class WriterLock {
 public:
  // The advisory lock's key (one bigint; "EXCHWRIT"): pg_locks shows it as classid 1163412296,
  // objid 1465010516, objsubid 1.
  static constexpr std::int64_t kKey = 0x4558434857524954;

  struct Options {
    std::string conninfo;
    std::string program;                   // who we are, for writer_epoch.holder: "exchange-server"
    std::chrono::milliseconds wait{5000};  // how long to queue for the lock at start-up
    std::chrono::milliseconds timeout{5000};  // bounds every other call (--db-timeout-ms)
    std::chrono::milliseconds lease{5000};    // the holder's lease (--lease-ms)
  };

  // Takes the lock, queueing for it up to options.wait (not after `stop` is requested). Throws
  // WriterLockHeld naming the holder if it stayed held, std::runtime_error if PostgreSQL
  // cannot be asked.
  WriterLock(Options options, const util::StopFlag* stop);
  // A standby's: queues for the lock in PostgreSQL and returns at once (granted_within() says
  // when it is ours). Throws std::runtime_error if PostgreSQL cannot be asked.
  struct Queue {};
  WriterLock(Options options, Queue);
  // Stops the keeper and ends the session, which releases the lock.
  ~WriterLock();
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

  // Queued (the Queue constructor): waits up to `wait` for the lock; true once it is ours
  // (and at every later call). Throws std::runtime_error if the session broke (then
  // queue_again()).
  bool granted_within(std::chrono::milliseconds wait);
  // Queued: a new session queued again, after granted_within() threw. Throws as the
  // constructor.
  void queue_again();
  // Queued (writer_lease.cpp): if the lock's holder is the one writer_lease names and its lease
  // has expired by PostgreSQL's clock, terminates its lock session (the lock then comes to the
  // first session queued for it) and says so, naming it; nullopt if the lease holds or nobody
  // holds the lock. Runs on a session of its own; throws std::runtime_error if PostgreSQL
  // cannot be asked.
  std::optional<std::string> end_expired_holder();
  // Queued, after its own session broke (PostgreSQL restarted, or failed over to another
  // node: every session ended, the holder's too): why not to queue again yet, or nullopt to
  // queue now. Not while nobody holds the lock and the current epoch's lease still runs by
  // PostgreSQL's clock: its holder is alive and taking the lock back (its keeper retries
  // every second), and queueing now would take the lock from under it and turn a database
  // failover into an exchange failover too. Once another session holds the lock (queue
  // behind it) or the lease has expired (take it), nullopt. Throws std::runtime_error if
  // PostgreSQL cannot be asked.
  std::optional<std::string> hold_back_queueing();

  // Once the schema exists, before the state is loaded: bumps writer_epoch and the
  // projection's fence (every earlier writer's appends and projection writes are fenced from
  // now on), takes the lease for it, and returns the new epoch. Sessions that keep the bump
  // waiting (a paused earlier writer's transaction holding either row) are terminated: the
  // lock is ours, so they are stale. Its projection writes at once, the rest after half a
  // second. Call once.
  std::int64_t begin_epoch();
  // Whether the lease is still ours by the local clock (counted from when its last renewal
  // was sent). Lock-free; false before begin_epoch().
  bool lease_valid() const;
  std::int64_t epoch() const { return state_.token().epoch; }
  std::chrono::milliseconds lease() const { return options_.lease; }
  FencingToken token() const { return state_.token(); }
  // Where leadership stands (state.hpp).
  State state() const { return state_.state(); }

  // Starts the keeper thread (writer_lock_keeper.cpp). If the lock cannot be ours again it
  // calls on_fenced once with why ("another server took over the database (...)") and ends.
  void keep(std::function<void(const std::string& why)> on_fenced);
  // Ends the keeper (the lock stays held until destruction): before what on_fenced touches
  // goes away.
  void stop_keeping();

 private:
  using Steady = std::chrono::steady_clock;
  struct Backend {
    int pid = 0;
    std::string started;
  };

  // The session holding the lock now, if any.
  std::optional<LockHolder> holder(LockConnection& conn);
  // writer_epoch as stored, described ("epoch N, holder H, since T"); empty before the
  // schema exists.
  std::string stored_epoch(LockConnection& conn, std::int64_t* epoch = nullptr);
  Backend backend_of(LockConnection& conn);
  Steady::time_point deadline() const { return Steady::now() + options_.timeout; }

  // The keeper (writer_lock_keeper.cpp).
  void run_keeper();
  // Renews the lease on the lock's session (writer_lease.cpp); the reason we are fenced if
  // writer_lease names another epoch now. Throws if the session broke.
  std::optional<std::string> renew_lease();
  // Terminates the sessions that block backend `pid`, only those of `application_name` unless
  // it is empty (writer_lease.cpp); what it ended.
  std::string end_blockers(int pid, const std::string& application_name = "");
  LockConnection& watch();
  // After the session ended: the lock again on a new session, or the reason we are fenced.
  // Throws while PostgreSQL cannot be asked.
  std::optional<std::string> take_again();

  Options options_;
  std::unique_ptr<LockConnection> conn_;  // the session holding the lock
  Backend backend_;                       // its backend
  // For the lease checks and ending blockers (application_name exchange-writer-watch): the
  // lock's own session may be busy queueing.
  std::unique_ptr<LockConnection> watch_;
  bool granted_ = false;  // queued: the lock came
  // Granted, bumped, renewed, lost: the state machine the methods above drive.
  Leadership state_;
  util::StopFlag stopping_;
  std::thread keeper_;
};

}  // namespace leadership
