#pragma once
// The writer lock's own PostgreSQL session, through libpq itself rather than libpqxx. A session
// advisory lock lives exactly as long as its session, and libpqxx 6 quietly opens a new session
// when a broken connection is used again: the lock would be gone and nothing would say so. Here
// a broken connection stays broken (usable() turns false) and the caller decides what to do.
//
// Every statement is sent asynchronously and waited for against a deadline and a stop flag, so
// none can hang on a silent network or outlive a shutdown; a statement cut short closes the
// connection.
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "util/stop_flag.hpp"

struct pg_conn;
struct pg_result;

namespace leadership {

// PostgreSQL answered with an error; `sqlstate` says which (e.g. 55P03, lock_not_available).
struct StatementRefused : std::runtime_error {
  StatementRefused(const std::string& what, std::string state)
      : std::runtime_error(what), sqlstate(std::move(state)) {}
  std::string sqlstate;
};

class LockConnection {
 public:
  using Clock = std::chrono::steady_clock;
  using Row = std::vector<std::optional<std::string>>;  // NULL is nullopt

  // Connects as `application_name` (whatever `conninfo` says), bounded by its connect_timeout.
  // Throws std::runtime_error with libpq's reason.
  LockConnection(const std::string& conninfo, const std::string& application_name);
  ~LockConnection();
  LockConnection(const LockConnection&) = delete;
  LockConnection& operator=(const LockConnection&) = delete;

  // Runs one statement with text parameters ($1, ...) and returns its rows. Throws
  // StatementRefused if PostgreSQL refused it; std::runtime_error (and closes the connection)
  // if it broke, or no answer came by `deadline`, or `stop` was requested meanwhile.
  std::vector<Row> exec(const std::string& sql, const std::vector<std::string>& params,
                        Clock::time_point deadline, const util::StopFlag* stop = nullptr);
  // The same in two steps, for a statement that may wait long in PostgreSQL (a standby
  // queued for the writer lock): send() returns at once; result_within() waits up to `wait`
  // and returns the rows once the answer is there (nullopt meanwhile), with exec()'s errors.
  // Nothing else may be sent before the answer has been taken.
  void send(const std::string& sql, const std::vector<std::string>& params);
  std::optional<std::vector<Row>> result_within(std::chrono::milliseconds wait);
  // Waits up to `wait` for the session to end under us (terminated, PostgreSQL restarted, the
  // network reset); true if it did. Anything else PostgreSQL sends meanwhile is discarded.
  bool broke_within(std::chrono::milliseconds wait);
  bool usable() const;

 private:
  void close();
  // The rows of the statement sent, if its answer has come in full; throws as exec().
  std::optional<std::vector<Row>> take_result();
  // libpq's last error message, on one line.
  std::string error() const;

  pg_conn* conn_ = nullptr;
  // The statement's result taken so far: libpq hands it over before the end of the answer.
  pg_result* last_ = nullptr;
};

}  // namespace leadership
