#include "app/archived_orders.hpp"

#include <algorithm>
#include <optional>

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
  using market::Reason;
  std::optional<market::Reject> problem;
  if (answer.kind == Kind::Busy) {
    problem = market::Reject(Reason::ArchiveBusy);
    problem->limit = store::OrderArchive::kWaitingPerConnection;
    problem->count = connections;
  } else if (answer.kind == Kind::Failed) {
    problem = market::Reject(Reason::ArchiveFailed);
  }
  for (const auto& lookup : applied.archive_lookups) {
    protocol::ResultItem& item = applied.result.items[lookup.index];
    if (!problem) {
      auto found = answer.orders.find(lookup.id);
      if (found != answer.orders.end()) {
        item.reject = admission.reply_status(lookup.child, found->second.fills.size());
        if (item.reject)
          item.kind = protocol::ResultItem::Kind::Error;
        else
          item.status = found->second;
        continue;
      }
    }
    item.kind = protocol::ResultItem::Kind::Error;
    item.reject = problem ? *problem : market::Reject(Reason::NoSuchOrder);
  }
}

}  // namespace app
