#include "leadership/lock_connection.hpp"

#include <poll.h>

#include <algorithm>
#include <cctype>
#include <memory>

#include <libpq-fe.h>

namespace leadership {
namespace {

// A session ended by the server (pg_terminate_backend, a restart) says so as a FATAL message
// outside any statement, which libpq would print on stderr: the keeper reports it instead.
void discard_notice(void*, const char*) {}

struct ResultFree {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultFree>;

std::string one_line(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  for (auto& c : s)
    if (c == '\n' || c == '\t') c = ' ';
  return s;
}

// Whether the socket has something to read (or hung up) within `wait`.
bool readable(int fd, std::chrono::milliseconds wait) {
  pollfd p{fd, POLLIN, 0};
  const int n = ::poll(&p, 1, static_cast<int>(std::max<long long>(wait.count(), 0)));
  return n > 0;
}

}  // namespace

LockConnection::LockConnection(const std::string& conninfo, const std::string& application_name) {
  // expand_dbname: the first "dbname" is the whole conninfo (a URI or key=value string); the
  // keywords after it override what it says.
  const char* keys[] = {"dbname", "application_name", nullptr};
  const char* values[] = {conninfo.c_str(), application_name.c_str(), nullptr};
  conn_ = PQconnectdbParams(keys, values, 1);
  if (!conn_ || PQstatus(conn_) != CONNECTION_OK) {
    const std::string why = conn_ ? error() : "out of memory";
    close();
    throw std::runtime_error("cannot connect to PostgreSQL: " + why);
  }
  PQsetNoticeProcessor(conn_, discard_notice, nullptr);
}

LockConnection::~LockConnection() { close(); }

void LockConnection::close() {
  if (last_) PQclear(last_);
  last_ = nullptr;
  if (conn_) PQfinish(conn_);  // ends the session: PostgreSQL releases its locks
  conn_ = nullptr;
}

bool LockConnection::usable() const { return conn_ && PQstatus(conn_) == CONNECTION_OK; }

std::string LockConnection::error() const { return one_line(PQerrorMessage(conn_)); }

void LockConnection::send(const std::string& sql, const std::vector<std::string>& params) {
  if (!usable()) throw std::runtime_error("the writer lock's connection is closed");
  std::vector<const char*> values;
  for (const auto& p : params) values.push_back(p.c_str());
  if (!PQsendQueryParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr,
                         values.data(), nullptr, nullptr, 0)) {
    const std::string why = error();
    close();
    throw std::runtime_error("sending to PostgreSQL: " + why);
  }
}

std::optional<std::vector<LockConnection::Row>> LockConnection::take_result() {
  if (!PQconsumeInput(conn_)) {
    const std::string why = error();
    close();
    throw std::runtime_error("the connection broke: " + why);
  }
  while (!PQisBusy(conn_)) {
    PGresult* r = PQgetResult(conn_);
    if (!r) {
      Result last(last_);
      last_ = nullptr;
      if (!last) throw std::runtime_error("PostgreSQL returned no result");
      const ExecStatusType status = PQresultStatus(last.get());
      if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
        const char* state = PQresultErrorField(last.get(), PG_DIAG_SQLSTATE);
        throw StatementRefused(one_line(PQresultErrorMessage(last.get())), state ? state : "");
      }
      std::vector<Row> rows;
      for (int i = 0; i < PQntuples(last.get()); ++i) {
        Row row;
        for (int j = 0; j < PQnfields(last.get()); ++j)
          row.push_back(PQgetisnull(last.get(), i, j)
                            ? std::nullopt
                            : std::optional<std::string>(PQgetvalue(last.get(), i, j)));
        rows.push_back(std::move(row));
      }
      return rows;
    }
    // The statement's result; a null follows once PostgreSQL is ready for the next one.
    if (last_) PQclear(last_);
    last_ = r;
  }
  return std::nullopt;
}

std::optional<std::vector<LockConnection::Row>> LockConnection::result_within(
    std::chrono::milliseconds wait) {
  if (!usable()) throw std::runtime_error("the writer lock's connection is closed");
  if (auto rows = take_result()) return rows;
  readable(PQsocket(conn_), wait);
  return take_result();
}

std::vector<LockConnection::Row> LockConnection::exec(const std::string& sql,
                                                      const std::vector<std::string>& params,
                                                      Clock::time_point deadline,
                                                      const util::StopFlag* stop) {
  send(sql, params);
  for (;;) {
    if (auto rows = take_result()) return std::move(*rows);
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0 || (stop && stop->requested())) {
      close();
      throw std::runtime_error(left.count() <= 0 ? "no answer from PostgreSQL in time"
                                                 : "shutting down");
    }
    // In short steps, so a stop request is seen within one.
    readable(PQsocket(conn_), std::min(left, std::chrono::milliseconds(200)));
  }
}

bool LockConnection::broke_within(std::chrono::milliseconds wait) {
  if (!usable()) return true;
  if (!readable(PQsocket(conn_), wait)) return false;
  // Something came, or the socket closed: an end of the session shows as a failed read or a
  // bad status. A FATAL message may come a moment before the end; the next call sees that.
  if (!PQconsumeInput(conn_) || PQstatus(conn_) != CONNECTION_OK) {
    close();
    return true;
  }
  while (PGresult* r = PQgetResult(conn_)) PQclear(r);
  return false;
}

}  // namespace leadership
