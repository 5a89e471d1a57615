#include "app/apply.hpp"

namespace app {
namespace {

using protocol::CreateItem;
using protocol::ResultItem;
using protocol::TransactionItem;

ResultItem error(const protocol::Attributes& attrs, std::string message) {
  ResultItem r;
  r.kind = ResultItem::Kind::Error;
  r.attrs = attrs;
  r.message = std::move(message);
  return r;
}

ResultItem apply_create(const CreateItem& item, exchange::Engine& engine, exchange::Effects& fx) {
  if (!item.invalid.empty()) return error(item.echo, item.invalid);
  std::string why = item.kind == CreateItem::Kind::Account
                        ? engine.create_account(item.account, item.amount, fx)
                        : engine.add_shares(item.symbol, item.account, item.amount, fx);
  if (!why.empty()) return error(item.echo, why);
  ResultItem r;
  r.kind = ResultItem::Kind::Created;
  r.attrs = item.echo;
  return r;
}

ResultItem apply_transaction(const std::string& account, const TransactionItem& item,
                             exchange::Engine& engine, std::int64_t now, exchange::Effects& fx,
                             bool& needs_archive) {
  if (!item.invalid.empty()) return error(item.echo, item.invalid);
  ResultItem r;
  switch (item.kind) {
    case TransactionItem::Kind::Order: {
      auto placed = engine.place_order(account, item.symbol, item.amount, item.limit, now, fx);
      if (!placed.error.empty()) return error(item.echo, placed.error);
      r.kind = ResultItem::Kind::Opened;
      r.attrs = item.echo;
      r.attrs.emplace_back("id", std::to_string(placed.id));
      return r;
    }
    case TransactionItem::Kind::Query: {
      const exchange::Order* order =
          item.order_id_exists ? engine.find_own_order(account, item.order_id) : nullptr;
      r.kind = ResultItem::Kind::Status;
      if (order) {
        r.status = exchange::Engine::status_of(*order);
      } else if (item.order_id_exists && engine.was_assigned(item.order_id) &&
                 !engine.holds_order(item.order_id)) {
        needs_archive = true;  // closed and no longer in memory: ask the database
      } else {
        return error(item.echo, kNoSuchOrder);
      }
      break;
    }
    case TransactionItem::Kind::Cancel: {
      if (!item.order_id_exists) return error(item.echo, kNoSuchOrder);
      // An order no longer in memory is closed: nothing to cancel either way.
      std::string why = engine.cancel(account, item.order_id, now, fx, r.status);
      if (!why.empty()) return error(item.echo, why);
      r.kind = ResultItem::Kind::Canceled;
      break;
    }
  }
  r.attrs = item.echo;
  return r;
}

}  // namespace

Applied apply(const protocol::Command& cmd, exchange::Engine& engine, std::int64_t now,
              exchange::Effects& fx) {
  Applied applied;
  protocol::Result& result = applied.result;
  switch (cmd.kind) {
    case protocol::Command::Kind::Invalid:
      result = protocol::Result::failure(cmd.error);
      break;
    case protocol::Command::Kind::Create:
      for (const CreateItem& item : cmd.creates)
        result.items.push_back(apply_create(item, engine, fx));
      break;
    case protocol::Command::Kind::Transactions: {
      std::string account_problem = cmd.account_invalid;
      if (account_problem.empty() && !engine.has_account(cmd.account))
        account_problem = "Unknown account";
      for (const TransactionItem& item : cmd.transactions) {
        bool needs_archive = false;
        result.items.push_back(
            account_problem.empty()
                ? apply_transaction(cmd.account, item, engine, now, fx, needs_archive)
                : error(item.echo, account_problem));
        if (needs_archive)
          applied.archive_lookups.push_back({result.items.size() - 1, item.order_id});
      }
      break;
    }
  }
  return applied;
}

}  // namespace app
