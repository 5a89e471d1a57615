#pragma once
// Authorization, in one place: after a request is parsed and before anything of it is applied
// or journaled, whether its caller may have it. A <create> needs the admin role; a
// <transactions> needs the trade role and its account among the principal's. A request that
// fails is refused whole: every child gets the same <error>, and nothing reaches the journal
// (a replay has no principal to check, so a refused request must never be there).
#include <optional>

#include "auth/caller.hpp"
#include "auth/gate.hpp"
#include "market/reject.hpp"
#include "protocol/command.hpp"
#include "protocol/result.hpp"

namespace app {

struct Refused {
  auth::Refusal why;      // for the counter and the log line
  market::Reject reject;  // for the reply's children
};

// Nullopt when `table`'s principal named by `caller` may have `cmd` (a valid command).
std::optional<Refused> authorize(const auth::Principals& table, const auth::Caller& caller,
                                 const protocol::Command& cmd);

// The result refusing every child of `cmd` with `why`.
protocol::Result refuse_every_child(const protocol::Command& cmd, const market::Reject& why);

}  // namespace app
