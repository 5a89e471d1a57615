#include "store/connection_bounds.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <utility>
#include <vector>

namespace store {
namespace {

bool is_uri(const std::string& s) {
  return s.rfind("postgresql://", 0) == 0 || s.rfind("postgres://", 0) == 0;
}

// Keys of a URI's query string (what follows '?', '&'-separated).
std::set<std::string> uri_keys(const std::string& uri) {
  std::set<std::string> keys;
  auto q = uri.find('?');
  if (q == std::string::npos) return keys;
  std::size_t start = q + 1;
  while (start <= uri.size()) {
    auto end = uri.find('&', start);
    if (end == std::string::npos) end = uri.size();
    std::string pair = uri.substr(start, end - start);
    keys.insert(pair.substr(0, pair.find('=')));
    start = end + 1;
  }
  return keys;
}

// Keys of a "key = value key='quoted \' value'" string, libpq's syntax.
std::set<std::string> keyword_keys(const std::string& s) {
  std::set<std::string> keys;
  std::size_t i = 0;
  auto skip_space = [&] {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  };
  for (;;) {
    skip_space();
    if (i >= s.size()) return keys;
    std::size_t start = i;
    while (i < s.size() && s[i] != '=' && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    keys.insert(s.substr(start, i - start));
    skip_space();
    if (i < s.size() && s[i] == '=') ++i;
    skip_space();
    if (i < s.size() && s[i] == '\'') {
      for (++i; i < s.size() && s[i] != '\''; ++i)
        if (s[i] == '\\') ++i;
      ++i;  // the closing quote
    } else {
      while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    }
  }
}

}  // namespace

ConnectionBounds bounds_for_timeout(std::chrono::milliseconds timeout) {
  const long ms = std::max<long>(1, static_cast<long>(timeout.count()));
  ConnectionBounds b;
  b.connect_timeout_s = static_cast<int>(std::max<long>(2, (ms + 999) / 1000));
  // Idle probes start after about the timeout; three unanswered probes a second or two apart
  // end the connection.
  b.keepalives_idle_s = static_cast<int>(std::max<long>(1, ms / 1000));
  b.keepalives_interval_s = static_cast<int>(std::clamp<long>(ms / 3000, 1, 10));
  b.keepalives_count = 3;
  b.tcp_user_timeout_ms = static_cast<int>(std::min<long>(ms, 1L << 30));
  return b;
}

std::string with_connection_bounds(const std::string& conninfo, const ConnectionBounds& b) {
  const std::vector<std::pair<std::string, std::string>> wanted = {
      {"connect_timeout", std::to_string(b.connect_timeout_s)},
      {"keepalives", "1"},
      {"keepalives_idle", std::to_string(b.keepalives_idle_s)},
      {"keepalives_interval", std::to_string(b.keepalives_interval_s)},
      {"keepalives_count", std::to_string(b.keepalives_count)},
      {"tcp_user_timeout", std::to_string(b.tcp_user_timeout_ms)},
  };
  const bool uri = is_uri(conninfo);
  const std::set<std::string> present = uri ? uri_keys(conninfo) : keyword_keys(conninfo);
  std::string out = conninfo;
  for (const auto& [key, value] : wanted) {
    if (present.count(key)) continue;
    if (uri) {
      char sep = out.find('?') == std::string::npos ? '?' : '&';
      if (out.back() == '?' || out.back() == '&') sep = '\0';
      if (sep) out += sep;
    } else if (!out.empty() && !std::isspace(static_cast<unsigned char>(out.back()))) {
      out += ' ';
    }
    out += key + "=" + value;
  }
  return out;
}

}  // namespace store
