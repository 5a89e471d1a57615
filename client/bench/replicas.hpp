// Replica mode: compare the replies of R servers to the same request.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "bench/executor.hpp"
#include "bench/reply.hpp"

namespace exch::bench {

struct VoteOutcome {
  std::size_t replied = 0;    // targets that sent a reply
  std::size_t failed = 0;     // targets with a connection error
  bool disagree = false;      // replies differ after normalize_for_vote
  std::size_t winner = 0;     // target whose reply is in the largest group (ties: lowest index)
  std::int64_t first_ns = 0;  // first reply in (a failure's time if nothing replied)
  std::int64_t all_ns = 0;    // every target done (reply or failure)
};

VoteOutcome vote(const std::vector<TargetResult>& results, const std::vector<ChildKind>& kinds);

}  // namespace exch::bench
