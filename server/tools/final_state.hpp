#pragma once
// The state a replay ends in, folded from the rows each replayed entry changed (a later row for
// the same key supersedes an earlier one, as in the projection), written as JSON in the shape
// of the chaos runner's final.json, so the checker compares it with the tables field by field.
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <utility>

#include "market/effects.hpp"

namespace tools {

class FinalState {
 public:
  void absorb(const market::Effects& fx);
  // {"accounts": [...], "positions": [...], "orders": [...], "executions": [...]}, each in key
  // order; decimals as canonical strings.
  void write_json(std::ostream& out) const;

 private:
  std::map<std::string, market::AccountRow> accounts_;
  std::map<std::pair<std::string, std::string>, market::PositionRow> positions_;
  std::map<market::OrderId, market::OrderRow> orders_;
  std::map<std::int64_t, market::ExecutionRow> executions_;
};

}  // namespace tools
