#pragma once
// What the three files of store::Database (database.cpp: state and projection; journal_sql.cpp:
// the journal; archive_sql.cpp: archived orders) share: the watchdog wrapper every call goes
// through, array parameters and reading decimals.
#include <string>
#include <type_traits>

#include <pqxx/pqxx>

#include "market/decimal.hpp"
#include "store/database.hpp"
#include "store/watchdog.hpp"

namespace store {

template <typename Call>
auto Database::bounded(const char* what, std::chrono::milliseconds limit, Call&& call) {
  if (broken_) throw pqxx::broken_connection("the connection broke earlier");
  auto guard = Watchdog::shared().arm(conn_->sock(), limit);
  try {
    if constexpr (std::is_void_v<decltype(call())>) {
      call();
      if (guard.fired()) broken_ = true;  // it finished, but its socket is shut now
    } else {
      auto result = call();
      if (guard.fired()) broken_ = true;
      return result;
    }
  } catch (const std::exception& e) {
    broken_ = true;  // whatever failed, a fresh connection is the safe next step
    if (guard.fired_by_fire_all())
      throw DatabaseTimeout(std::string(what) + ": cut off by the shutdown; connection closed");
    if (guard.fired())
      throw DatabaseTimeout(std::string(what) + ": no answer from PostgreSQL within " +
                            std::to_string(limit.count()) + " ms; connection closed");
    throw;
  }
}

// A NUMERIC column's value.
inline market::Decimal decimal(const pqxx::field& f) {
  return market::Decimal::parse_stored(f.c_str());
}

// Builds a PostgreSQL array literal, quoting every element.
class ArrayLiteral {
 public:
  void add(const std::string& value) {
    separate();
    text_ += '"';
    for (char c : value) {
      if (c == '"' || c == '\\') text_ += '\\';
      text_ += c;
    }
    text_ += '"';
  }
  void add(market::Decimal value) { add(value.to_string()); }
  void add(std::int64_t value) {
    separate();
    text_ += std::to_string(value);
  }
  void add_null() {
    separate();
    text_ += "NULL";
  }
  std::string done() { return text_ + '}'; }

 private:
  void separate() { text_ += text_.size() > 1 ? "," : ""; }
  std::string text_ = "{";
};

}  // namespace store
