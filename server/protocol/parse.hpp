#pragma once
#include <cstddef>
#include <string_view>

#include "protocol/command.hpp"

namespace protocol {

// Each limit refuses the whole request, before any Command is built for it, with an error
// that names the flag: nothing over a limit is ever applied or journaled, so a replay parses
// the journal without them (an operator may change them between runs). The server's come from
// its settings (protocol/parse_settings.cpp) through app::HandlerLimits; a default-made value holds
// the defaults.
struct ParseLimits {
  // Element children of <create> or <transactions>, each <symbol>'s children counted too
  // (they become a reply each).
  std::size_t max_children = 10000;
  // Characters of any `id` attribute (account ids, order ids): ids are index keys in
  // PostgreSQL and are copied into every order and row that names them.
  std::size_t max_id_length = 32;
  // Characters of any `sym` attribute, for the same reasons.
  std::size_t max_symbol_length = 32;
  // Attributes of one element: every attribute is echoed in its reply, and duplicates are
  // looked for among them.
  std::size_t max_attributes = 16;

  // No limit at all: what a journal replay parses with.
  static ParseLimits unlimited();
};

// XML payload to Command, within `limits`. Never throws: malformed input becomes an Invalid
// command or invalid items with a message a client can act on.
Command parse(std::string_view payload, const ParseLimits& limits);

// Exposed for tests: the name rules of PROTOCOL.md section 1.
bool is_valid_account_id(std::string_view id);
bool is_valid_symbol(std::string_view symbol);

}  // namespace protocol
