#pragma once
// How large a reply may be, from the size of its request (docs/PROTOCOL.md section 7): `ratio`
// times the request, always at least `allowance`, never more than `max`. One rule for the two
// places that need it: app::Admission refuses what would go past it, and a net::Session
// reserves it in the buffer budget while the request runs, so a request is only taken while
// there is room for its reply.
#include <algorithm>
#include <cstddef>

namespace protocol {

struct ReplyBound {
  std::size_t ratio = 0;      // --max-reply-ratio
  std::size_t allowance = 0;  // always allowed, whatever the request's size
  std::size_t max = 0;        // --max-reply-bytes
  // All zero: no bound known (for_request() is then 0).

  std::size_t for_request(std::size_t request_bytes) const {
    const std::size_t by_ratio =
        ratio != 0 && request_bytes > max / ratio ? max : request_bytes * ratio;
    return std::min(max, std::max(allowance, by_ratio));
  }
};

}  // namespace protocol
