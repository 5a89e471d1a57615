#pragma once
#include <string>
#include <string_view>

#include "protocol/result.hpp"

namespace protocol {

// Result to the reply document: <?xml ...?><results>...</results>, UTF-8. Rejects are worded
// by reject_text (protocol/reject_text.hpp).
std::string render(const Result& result);

// The reply to a request that ended without a result, for a text that is not a reject's: the
// request-level errors of serving/reply_errors.hpp and net's framing refusals.
std::string render_error(std::string_view text);

}  // namespace protocol
