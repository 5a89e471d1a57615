#pragma once
// Many requests' effects merged into one write: the last row per key wins, which is the state
// at the moment the batch was sealed (effects are merged in engine order, under its lock).
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "exchange/effects.hpp"

namespace store {

struct Batch {
  std::set<std::string> symbols;
  std::unordered_map<std::string, exchange::AccountRow> accounts;
  std::map<std::pair<std::string, std::string>, exchange::PositionRow> positions;
  std::unordered_map<exchange::OrderId, exchange::OrderRow> orders;
  std::vector<exchange::ExecutionRow> executions;
  std::size_t requests = 0;

  void merge(exchange::Effects&& fx);
  bool empty() const { return requests == 0; }
};

}  // namespace store
