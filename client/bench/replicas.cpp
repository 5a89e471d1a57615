#include "bench/replicas.hpp"

#include <algorithm>
#include <limits>

namespace exch::bench {

VoteOutcome vote(const std::vector<TargetResult>& results, const std::vector<ChildKind>& kinds) {
  VoteOutcome v;
  std::int64_t first_ok = std::numeric_limits<std::int64_t>::max();
  std::int64_t first_any = std::numeric_limits<std::int64_t>::max();
  std::vector<std::string> normalized(results.size());
  for (std::size_t t = 0; t < results.size(); ++t) {
    const TargetResult& r = results[t];
    v.all_ns = std::max(v.all_ns, r.end_ns);
    first_any = std::min(first_any, r.end_ns);
    if (!r.ok) {
      ++v.failed;
      continue;
    }
    ++v.replied;
    first_ok = std::min(first_ok, r.end_ns);
    if (results.size() > 1) normalized[t] = normalize_for_vote(r.body, kinds);
  }
  v.first_ns = v.replied > 0 ? first_ok : (results.empty() ? 0 : first_any);
  if (results.size() <= 1) return v;

  std::size_t best_votes = 0;
  bool have_reference = false;
  std::size_t reference = 0;
  for (std::size_t t = 0; t < results.size(); ++t) {
    if (!results[t].ok) continue;
    if (!have_reference) {
      have_reference = true;
      reference = t;
    } else if (normalized[t] != normalized[reference]) {
      v.disagree = true;
    }
    std::size_t votes = 0;
    for (std::size_t u = 0; u < results.size(); ++u)
      if (results[u].ok && normalized[u] == normalized[t]) ++votes;
    if (votes > best_votes) {
      best_votes = votes;
      v.winner = t;
    }
  }
  return v;
}

}  // namespace exch::bench
