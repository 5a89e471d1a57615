#include "app/apply.hpp"

#include <optional>
#include <utility>

namespace app {
namespace {

using market::Reason;
using market::Reject;
using protocol::CreateItem;
using protocol::ResultItem;
using protocol::TransactionItem;

ResultItem error(const protocol::Attributes& attrs, Reject why) {
  ResultItem r;
  r.kind = ResultItem::Kind::Error;
  r.attrs = attrs;
  r.reject = std::move(why);
  return r;
}

// Items that passed the parser's value rules reach the engine, which takes them as its
// preconditions (market/engine.hpp); admission and the engine check what depends on state.
ResultItem apply_create(std::size_t index, const CreateItem& item, market::Engine& engine,
                        market::Effects& fx, Admission& admission) {
  if (item.invalid) return error(item.echo, *item.invalid);
  const bool account = item.kind == CreateItem::Kind::Account;
  std::optional<Reject> why = account ? admission.create_account(index, engine, item.account)
                                      : admission.add_shares(index, engine, item.symbol);
  if (why) return error(item.echo, std::move(*why));
  why = account ? engine.create_account(item.account, item.amount, fx)
                : engine.add_shares(item.symbol, item.account, item.amount, fx);
  if (why) return error(item.echo, std::move(*why));
  ResultItem r;
  r.kind = ResultItem::Kind::Created;
  r.attrs = item.echo;
  return r;
}

ResultItem apply_transaction(std::size_t index, const std::string& account,
                             const TransactionItem& item, market::Engine& engine, std::int64_t now,
                             market::Effects& fx, Admission& admission, bool& needs_archive) {
  if (item.invalid) return error(item.echo, *item.invalid);
  ResultItem r;
  switch (item.kind) {
    case TransactionItem::Kind::Order: {
      if (auto why = admission.place_order(index, engine, account, item.symbol, item.terms))
        return error(item.echo, std::move(*why));
      auto placed =
          engine.place(account, item.symbol, item.terms, now, fx, admission.execution_budget());
      if (placed.reject)
        return error(item.echo, admission.engine_refused(index, std::move(*placed.reject)));
      admission.spent(placed.executions);
      r.kind = ResultItem::Kind::Opened;
      r.attrs = item.echo;
      r.attrs.emplace_back("id", std::to_string(placed.id));
      return r;
    }
    case TransactionItem::Kind::Replace: {
      if (!item.order_id_exists) return error(item.echo, Reject(Reason::NoSuchOrder));
      if (auto why = admission.replace(index)) return error(item.echo, std::move(*why));
      std::size_t executions = 0;
      if (auto why = engine.replace(account, item.order_id, item.terms.amount, item.terms.limit,
                                    now, fx, executions, admission.execution_budget()))
        return error(item.echo, admission.engine_refused(index, std::move(*why)));
      admission.spent(executions);
      r.kind = ResultItem::Kind::Replaced;
      break;
    }
    case TransactionItem::Kind::Query: {
      const market::Order* order =
          item.order_id_exists ? engine.find_own_order(account, item.order_id) : nullptr;
      r.kind = ResultItem::Kind::Status;
      if (order) {
        if (auto why = admission.reply_status(index, order->fills.size()))
          return error(item.echo, std::move(*why));
        r.status = market::Engine::status_of(*order);
      } else if (item.order_id_exists && engine.was_assigned(item.order_id) &&
                 !engine.holds_order(item.order_id)) {
        needs_archive = true;  // closed and no longer in memory: ask the database
      } else {
        return error(item.echo, Reject(Reason::NoSuchOrder));
      }
      break;
    }
    case TransactionItem::Kind::Cancel: {
      if (!item.order_id_exists) return error(item.echo, Reject(Reason::NoSuchOrder));
      // Its reply lists the order's executions: within the reply's budget, or not cancelled.
      const market::Order* order = engine.find_own_order(account, item.order_id);
      if (order && order->is_open()) {
        if (auto why = admission.reply_status(index, order->fills.size()))
          return error(item.echo, std::move(*why));
      }
      // An order no longer in memory is closed: nothing to cancel either way.
      if (auto why = engine.cancel(account, item.order_id, now, fx, r.status))
        return error(item.echo, std::move(*why));
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
      result.error = cmd.error;  // parse() sets it for every Invalid command
      break;
    case protocol::Command::Kind::Create:
      for (std::size_t i = 0; i < cmd.creates.size(); ++i)
        result.items.push_back(apply_create(i, cmd.creates[i], engine, fx, admission));
      break;
    case protocol::Command::Kind::Transactions: {
      std::optional<Reject> account_problem = cmd.account_invalid;
      if (!account_problem && !engine.has_account(cmd.account))
        account_problem = Reject(Reason::UnknownAccount);
      for (std::size_t i = 0; i < cmd.transactions.size(); ++i) {
        const TransactionItem& item = cmd.transactions[i];
        bool needs_archive = false;
        result.items.push_back(account_problem
                                   ? error(item.echo, *account_problem)
                                   : apply_transaction(i, cmd.account, item, engine, now, fx,
                                                       admission, needs_archive));
        if (needs_archive)
          applied.archive_lookups.push_back({result.items.size() - 1, i, item.order_id});
      }
      break;
    }
  }
  return applied;
}

}  // namespace app
