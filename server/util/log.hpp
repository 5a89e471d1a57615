#pragma once
// A tiny logger: whole lines to stderr, filtered by level (--log-level). Lines from different
// threads never interleave.
//
//   EXCHANGE_LOG(info) << "serving on " << port;
//
// The stream expression is not evaluated when the level is filtered out.
#include <sstream>
#include <string>

namespace util {

enum class LogLevel { error = 0, warn = 1, info = 2, debug = 3 };

// "error", "warn", "info" or "debug"; false for anything else.
bool parse_log_level(const std::string& name, LogLevel& level);
void set_log_level(LogLevel level);
bool log_enabled(LogLevel level);
// Writes "PROGRAM: LEVEL: message" and a newline.
void log_line(LogLevel level, const std::string& message);
// The PROGRAM of every line ("exchange-server" unless set): exchange-floor sets its own, so
// the two are told apart when a benchmark runs both. Call before starting threads; `name`
// must outlive them (a string literal).
void set_log_program(const char* name);

// Collects one line and writes it when destroyed.
class LogLine {
 public:
  explicit LogLine(LogLevel level) : level_(level) {}
  ~LogLine() { log_line(level_, out_.str()); }
  LogLine(const LogLine&) = delete;
  LogLine& operator=(const LogLine&) = delete;
  template <typename T>
  LogLine& operator<<(const T& value) {
    out_ << value;
    return *this;
  }

 private:
  LogLevel level_;
  std::ostringstream out_;
};

}  // namespace util

// A for loop rather than if/else, so the macro is safe in an unbraced if.
#define EXCHANGE_LOG(level)                                                                      \
  for (bool exchange_log_once = ::util::log_enabled(::util::LogLevel::level); exchange_log_once; \
       exchange_log_once = false)                                                                \
  ::util::LogLine(::util::LogLevel::level)
