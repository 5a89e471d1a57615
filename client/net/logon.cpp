#include "net/logon.hpp"

#include "net/framing.hpp"
#include "wire/session_hello.hpp"

namespace exch::net {

namespace {

// The reason after "EXCHANGE-LOGON 1 REFUSED", if `line` is a refusal.
bool refusal_reason(const std::string& line, std::string& reason) {
  const std::string_view prefix = wire::kLogonRefused;
  if (line.compare(0, prefix.size(), prefix) != 0) return false;
  if (line.size() > prefix.size() && line[prefix.size()] != ' ') return false;
  reason = line.size() > prefix.size() + 1 ? line.substr(prefix.size() + 1) : "no reason given";
  return true;
}

[[noreturn]] void lost(const std::string& why, bool request_sent) {
  if (request_sent) throw NoReply(why);
  throw NotSent(why);
}

}  // namespace

std::string logon_line(const Credentials& credentials) {
  return std::string(wire::kLogon) + " " + credentials.principal + " " + credentials.api_key + "\n";
}

std::string redact_key(std::string text, const std::string& key) {
  if (key.empty()) return text;
  const std::string mask = "<key>";
  for (auto at = text.find(key); at != std::string::npos; at = text.find(key, at + mask.size()))
    text.replace(at, key.size(), mask);
  return text;
}

void expect_logon_accepted(Connection& c, Clock::time_point deadline,
                           const Credentials& credentials, bool request_sent) {
  const std::string peer = c.peer();
  bool eof = false;
  std::string line;
  try {
    line = c.read_line(deadline, 4096, eof);
  } catch (const NotSent&) {
    c.close();
    throw;  // the TLS handshake refused this client
  } catch (const NetError& e) {
    c.close();
    lost(std::string(e.what()) + " (waiting for the answer to the logon)", request_sent);
  }
  std::string reason;
  if (refusal_reason(line, reason)) {
    c.close();
    throw LogonRefused("logon refused: " +
                       printable_excerpt(redact_key(reason, credentials.api_key), 300));
  }
  if (!eof && line == wire::kLogonAccept) return;
  if (eof && (line.empty() || line == wire::kLogonAccept)) {
    c.close();
    lost(peer + " closed the connection without answering the logon", request_sent);
  }
  std::string answer = line;
  if (!eof)
    answer += "\n" + c.read_some_quietly(Clock::now() + std::chrono::milliseconds(500), 2048);
  c.close();
  throw NotSent("server does not support key logon (it answered: " +
                printable_excerpt(redact_key(answer, credentials.api_key), 300) + ")");
}

}  // namespace exch::net
