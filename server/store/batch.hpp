#pragma once
// Many requests' effects merged into one write: the last row per key wins, which is the state
// at the moment the batch was sealed (effects are merged in engine order, under its lock).
// The group commit writes only `journal`; the projector writes the effects later.
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "market/effects.hpp"
#include "store/journal.hpp"

namespace store {

struct Batch {
  std::set<std::string> symbols;
  std::unordered_map<std::string, market::AccountRow> accounts;
  std::map<std::pair<std::string, std::string>, market::PositionRow> positions;
  std::unordered_map<market::OrderId, market::OrderRow> orders;
  std::vector<market::ExecutionRow> executions;
  std::vector<JournalEntry> journal;  // in seq order
  // Requests' effects not merged into the rows above yet (add()): appending is all the group
  // commit does under the engine lock; the projector's thread merges them (fold()).
  std::vector<market::Effects> unmerged;
  std::size_t requests = 0;
  // Rows as the requests produced them, before merging: what the batch holds in memory, and
  // at most what the projection writes for it.
  std::size_t rows = 0;

  // One request's effects, merged into the rows now.
  void merge(market::Effects&& fx);
  // One request's effects, kept aside until fold() (cheap: a move).
  void add(market::Effects&& fx);
  // Merges what add() kept aside, in order.
  void fold();
  // Appends a later batch: its rows supersede ours, its executions and journal follow ours.
  // Folds both.
  void merge(Batch&& later);
  bool empty() const { return requests == 0; }

 private:
  void merge_rows(market::Effects&& fx);
};

}  // namespace store
