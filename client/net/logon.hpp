// The key logon of PROTOCOL.md section 2, client side. The line goes first, pipelined with
// what follows it (the request, or the session hello); its answer is read first:
//   client -> "EXCHANGE-LOGON 1 NAME KEY\n"
//   server -> "EXCHANGE-LOGON 1 OK\n"  or  "EXCHANGE-LOGON 1 REFUSED why\n" and it closes.
#pragma once

#include <string>

#include "net/connect_options.hpp"
#include "net/connection.hpp"

namespace exch::net {

// "EXCHANGE-LOGON 1 NAME KEY\n". Holds the key: write it, never show it.
std::string logon_line(const Credentials& credentials);

// Reads the answer to the logon line and returns when it is OK. Throws LogonRefused ("logon
// refused: why") on a refusal and NotSent on any other answer (a server that does not know the
// logon choked on that line: nothing was applied). Silence, a timeout or a lost connection
// throw NoReply when `request_sent` (the request went out behind the logon line, its outcome is
// unknown), NotSent otherwise. The connection is closed on every failure.
void expect_logon_accepted(Connection& c, Clock::time_point deadline,
                           const Credentials& credentials, bool request_sent);

// `text` with the key replaced by "<key>" wherever it occurs: for quoting what a server said.
std::string redact_key(std::string text, const std::string& key);

}  // namespace exch::net
