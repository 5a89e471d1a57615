#pragma once
// The one table from a reject reason to the text a client reads in its <error>: every refusal
// of a request or of one of its children, whichever layer checked the rule, is worded here.
//
// Clients, tests, scripts and docs match these texts (docs/PROTOCOL.md, client/bench/reasons.hpp,
// tests/e2e): grep tests/ scripts/ docs/ client/ writeup/ before changing one. Texts for a
// request that ended without its result for reasons other than its content (busy, unavailable,
// internal errors) are serving/'s (serving/reply_errors.hpp).
#include <string>

#include "market/reject.hpp"

namespace protocol {

// What the reply says for `reject`: never empty, one wording per reason.
std::string reject_text(const market::Reject& reject);

}  // namespace protocol
