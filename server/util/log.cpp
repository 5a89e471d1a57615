#include "util/log.hpp"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace util {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::info)};
std::mutex g_mutex;
std::atomic<const char*> g_program{"exchange-server"};

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::error:
      return "error";
    case LogLevel::warn:
      return "warn";
    case LogLevel::info:
      return "info";
    case LogLevel::debug:
      return "debug";
  }
  return "?";
}

}  // namespace

bool parse_log_level(const std::string& name, LogLevel& level) {
  for (LogLevel l : {LogLevel::error, LogLevel::warn, LogLevel::info, LogLevel::debug}) {
    if (name == level_name(l)) {
      level = l;
      return true;
    }
  }
  return false;
}

void set_log_level(LogLevel level) {
  g_level.store(static_cast<int>(level), std::memory_order_relaxed);
}

bool log_enabled(LogLevel level) {
  return static_cast<int>(level) <= g_level.load(std::memory_order_relaxed);
}

void set_log_program(const char* name) { g_program.store(name, std::memory_order_relaxed); }

void log_line(LogLevel level, const std::string& message) {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fprintf(stderr, "%s: %s: %s\n", g_program.load(std::memory_order_relaxed), level_name(level),
               message.c_str());
  std::fflush(stderr);
}

}  // namespace util
