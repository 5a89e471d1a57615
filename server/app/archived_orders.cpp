#include "app/archived_orders.hpp"

#include <algorithm>
#include <string>

namespace app {

std::vector<market::OrderId> archive_ids(const Applied& applied) {
  std::vector<market::OrderId> ids;
  ids.reserve(applied.archive_lookups.size());
  for (const auto& lookup : applied.archive_lookups) ids.push_back(lookup.id);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

void complete_lookups(Applied& applied, const store::OrderArchive::Answer& answer,
                      std::size_t connections, Admission& admission) {
  using Kind = store::OrderArchive::Answer::Kind;
  std::string problem;
  if (answer.kind == Kind::Busy)
    problem = "Server busy: too many archived-order lookups waiting (at most " +
              std::to_string(store::OrderArchive::kWaitingPerConnection) +
              " may wait per connection, and --archive-connections is " +
              std::to_string(connections) + "); retry";
  else if (answer.kind == Kind::Failed)
    problem = "Internal error: the order could not be read from the database; retry";
  for (const auto& lookup : applied.archive_lookups) {
    protocol::ResultItem& item = applied.result.items[lookup.index];
    if (problem.empty()) {
      auto found = answer.orders.find(lookup.id);
      if (found != answer.orders.end()) {
        item.message = admission.reply_status(lookup.child, found->second.fills.size());
        if (item.message.empty()) {
          item.status = found->second;
          continue;
        }
        item.kind = protocol::ResultItem::Kind::Error;
        continue;
      }
    }
    item.kind = protocol::ResultItem::Kind::Error;
    item.message = problem.empty() ? kNoSuchOrder : problem;
  }
}

}  // namespace app
