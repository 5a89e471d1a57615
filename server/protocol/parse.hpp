#pragma once
#include <cstddef>
#include <string_view>

#include "protocol/command.hpp"

namespace protocol {

struct ParseLimits {
  // Element children of <create> or <transactions>, each <symbol>'s children counted too
  // (they become a reply each): a request with more is refused as a whole, before any
  // Command is built for it.
  std::size_t max_children = 10000;
};

// The limits parse() applies when none are passed. Set once at start-up (from the server's
// flags) before any request is parsed; read-only afterwards, so readers need no lock.
const ParseLimits& default_parse_limits();
void set_default_parse_limits(const ParseLimits& limits);

// XML payload to Command. Never throws: malformed input becomes an Invalid command or invalid
// items with a message a client can act on.
Command parse(std::string_view payload, const ParseLimits& limits = default_parse_limits());

// Exposed for tests: the name rules of PROTOCOL.md section 1.
bool is_valid_account_id(std::string_view id);
bool is_valid_symbol(std::string_view symbol);

}  // namespace protocol
