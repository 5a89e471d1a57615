#pragma once
// The opt-in persistent session of PROTOCOL.md section 2, as both ends write and read it: a
// client whose first line is kSessionHello gets the line kSessionAccept back, and from then on
// every request and every reply is framed (length line, then the XML) on one connection. Each
// is a line: "\n" follows it on the wire (a reader also takes "\r\n").
#include <string_view>

namespace wire {

inline constexpr std::string_view kSessionHello = "EXCHANGE-SESSION 1";
inline constexpr std::string_view kSessionAccept = "EXCHANGE-SESSION 1 OK";

// The key logon of PROTOCOL.md section 2: "EXCHANGE-LOGON 1 NAME KEY" as the very first line
// (before the session hello too), answered kLogonAccept, or kLogonRefused, a space, why, and
// the connection closed.
inline constexpr std::string_view kLogon = "EXCHANGE-LOGON 1";
inline constexpr std::string_view kLogonAccept = "EXCHANGE-LOGON 1 OK";
inline constexpr std::string_view kLogonRefused = "EXCHANGE-LOGON 1 REFUSED";

}  // namespace wire
