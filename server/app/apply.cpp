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

ResultItem apply_create(std::size_t index, const CreateItem& item, market::Engine& engine,
                        market::Effects& fx, Admission& admission) {
  if (!item.invalid.empty()) return error(item.echo, item.invalid);
  const bool account = item.kind == CreateItem::Kind::Account;
  std::string why = account ? admission.create_account(index, engine, item.account)
                            : admission.add_shares(index, engine, item.symbol);
  if (!why.empty()) return error(item.echo, why);
  why = account ? engine.create_account(item.account, item.amount, fx)
                : engine.add_shares(item.symbol, item.account, item.amount, fx);
  if (!why.empty()) return error(item.echo, why);
  ResultItem r;
  r.kind = ResultItem::Kind::Created;
  r.attrs = item.echo;
  return r;
}

ResultItem apply_transaction(std::size_t index, const std::string& account,
                             const TransactionItem& item, market::Engine& engine, std::int64_t now,
                             market::Effects& fx, Admission& admission, bool& needs_archive) {
  if (!item.invalid.empty()) return error(item.echo, item.invalid);
  ResultItem r;
  switch (item.kind) {
    case TransactionItem::Kind::Order: {
      std::string why =
          admission.place_order(index, engine, account, item.symbol, item.amount, item.limit);
      if (!why.empty()) return error(item.echo, why);
      auto placed = engine.place_order(account, item.symbol, item.amount, item.limit, now, fx);
      if (!placed.error.empty()) return error(item.echo, placed.error);
      r.kind = ResultItem::Kind::Opened;
      r.attrs = item.echo;
      r.attrs.emplace_back("id", std::to_string(placed.id));
      return r;
    }
    case TransactionItem::Kind::Query: {
      const market::Order* order =
          item.order_id_exists ? engine.find_own_order(account, item.order_id) : nullptr;
      r.kind = ResultItem::Kind::Status;
      if (order) {
        std::string why = admission.reply_status(index, order->fills.size());
        if (!why.empty()) return error(item.echo, why);
        r.status = market::Engine::status_of(*order);
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
      // Its reply lists the order's executions: within the reply's budget, or not cancelled.
      const market::Order* order = engine.find_own_order(account, item.order_id);
      if (order && order->is_open()) {
        std::string why = admission.reply_status(index, order->fills.size());
        if (!why.empty()) return error(item.echo, why);
      }
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

Applied apply(const protocol::Command& cmd, market::Engine& engine, std::int64_t now,
              market::Effects& fx, Admission& admission) {
  Applied applied;
  protocol::Result& result = applied.result;
  switch (cmd.kind) {
    case protocol::Command::Kind::Invalid:
      result = protocol::Result::failure(cmd.error);
      break;
    case protocol::Command::Kind::Create:
      for (std::size_t i = 0; i < cmd.creates.size(); ++i)
        result.items.push_back(apply_create(i, cmd.creates[i], engine, fx, admission));
      break;
    case protocol::Command::Kind::Transactions: {
      std::string account_problem = cmd.account_invalid;
      if (account_problem.empty() && !engine.has_account(cmd.account))
        account_problem = "Unknown account";
      for (std::size_t i = 0; i < cmd.transactions.size(); ++i) {
        const TransactionItem& item = cmd.transactions[i];
        bool needs_archive = false;
        result.items.push_back(
            account_problem.empty()
                ? apply_transaction(i, cmd.account, item, engine, now, fx, admission, needs_archive)
                : error(item.echo, account_problem));
        if (needs_archive)
          applied.archive_lookups.push_back({result.items.size() - 1, i, item.order_id});
      }
      break;
    }
  }
  return applied;
}

}  // namespace app
