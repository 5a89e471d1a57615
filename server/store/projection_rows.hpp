#pragma once
// What one projection write stores: requests' effects merged in journal order, so the last row
// per key wins (the state after the last of them) and executions follow one another. The
// projector's thread merges what the group commit hands on (store/projector.cpp), a replay
// merges its chunks itself (app/replay.cpp); Database::project writes the result.
#include <cstddef>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "market/effects.hpp"
#include "market/string_map.hpp"
#include "store/deferred_effects.hpp"

namespace store {

struct ProjectionRows {
  std::set<std::string> symbols;
  market::StringMap<market::AccountRow> accounts;
  // By (account, symbol), in no order: a write sorts them (Database::project).
  std::unordered_map<std::pair<std::string, std::string>, market::PositionRow,
                     market::StringPairHash>
      positions;
  // The last row of each order, `revised` if any of its rows merged was (see OrderRow).
  std::unordered_map<market::OrderId, market::OrderRow> orders;
  std::vector<market::ExecutionRow> executions;
  std::int64_t next_priority = 0;  // the largest Effects::next_priority merged
  // Rows as the requests produced them, before merging (DeferredEffects::rows()): what the
  // projection's lag is counted in.
  std::size_t rows = 0;

  // One request's effects, later than every one merged before: its rows supersede theirs.
  void merge(market::Effects&& fx);
  // Later requests' effects, one after another in the order they were added; leaves `later`
  // empty.
  void merge(DeferredEffects&& later);
  // Rows merged from later requests: theirs supersede ours, their executions follow ours.
  void merge(ProjectionRows&& later);
  // No row at all.
  bool empty() const;

 private:
  void merge_rows(market::Effects&& fx);
};

}  // namespace store
