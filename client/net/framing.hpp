// Framing of the exchange wire protocol (PROTOCOL.md §2) as seen by a client.
//
//   request  := LENGTH "\n" XML            (LENGTH = byte count of XML, base 10)
//   reply    := XML, then the server closes the connection          (default)
//
// Persistent sessions (opt-in extension; the lines are in common/wire/session_hello.hpp):
//   client -> "EXCHANGE-SESSION 1\n"          (wire::kSessionHello)
//   server -> "EXCHANGE-SESSION 1 OK\n"       (wire::kSessionAccept)
//   then any number of:  client -> LENGTH "\n" XML,  server -> LENGTH "\n" XML
//   the connection stays open until the client closes it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace exch::net {

// "N\n" + xml.
std::string frame_request(std::string_view xml);

// If `content` already starts with a length line (digits, optional '\r', '\n')
// directly followed by '<', returns the content without that line; otherwise
// returns the content unchanged. The announced number is not trusted.
std::string_view strip_length_line(std::string_view content);

// Parses a length line (without its '\n'; a trailing '\r' is tolerated).
// Returns nothing unless it is 1..18 decimal digits.
std::optional<std::size_t> parse_length_line(std::string_view line);

// One-line, length-limited rendering of bytes a server sent, for messages.
std::string printable_excerpt(std::string_view bytes, std::size_t max_chars = 200);

}  // namespace exch::net
