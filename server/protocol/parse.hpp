#pragma once
#include <string_view>

#include "protocol/command.hpp"

namespace protocol {

// XML payload to Command. Never throws: malformed input becomes an Invalid command or invalid
// items with a message a client can act on.
Command parse(std::string_view payload);

// Exposed for tests: the name rules of PROTOCOL.md section 1.
bool is_valid_account_id(std::string_view id);
bool is_valid_symbol(std::string_view symbol);

}  // namespace protocol
