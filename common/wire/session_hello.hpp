#pragma once
// The opt-in persistent session of PROTOCOL.md section 2, as both ends write and read it: a
// client whose first line is kSessionHello gets the line kSessionAccept back, and from then on
// every request and every reply is framed (length line, then the XML) on one connection. Each
// is a line: "\n" follows it on the wire (a reader also takes "\r\n").
#include <string_view>

namespace wire {

inline constexpr std::string_view kSessionHello = "EXCHANGE-SESSION 1";
inline constexpr std::string_view kSessionAccept = "EXCHANGE-SESSION 1 OK";

}  // namespace wire
