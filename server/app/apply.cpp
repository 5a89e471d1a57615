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

const char* kNoSuchOrder = "No such order for this account";

ResultItem apply_transaction(const std::string& account, const TransactionItem& item,
                             exchange::Engine& engine, std::int64_t now, exchange::Effects& fx) {
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
      if (!order) return error(item.echo, kNoSuchOrder);
      r.kind = ResultItem::Kind::Status;
      r.status = exchange::Engine::status_of(*order);
      break;
    }
    case TransactionItem::Kind::Cancel: {
      if (!item.order_id_exists) return error(item.echo, kNoSuchOrder);
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

protocol::Result apply(const protocol::Command& cmd, exchange::Engine& engine, std::int64_t now,
                       exchange::Effects& fx) {
  protocol::Result result;
  switch (cmd.kind) {
    case protocol::Command::Kind::Invalid:
      return protocol::Result::failure(cmd.error);
    case protocol::Command::Kind::Create:
      for (const CreateItem& item : cmd.creates)
        result.items.push_back(apply_create(item, engine, fx));
      break;
    case protocol::Command::Kind::Transactions: {
      std::string account_problem = cmd.account_invalid;
      if (account_problem.empty() && !engine.has_account(cmd.account))
        account_problem = "Unknown account";
      for (const TransactionItem& item : cmd.transactions)
        result.items.push_back(account_problem.empty()
                                   ? apply_transaction(cmd.account, item, engine, now, fx)
                                   : error(item.echo, account_problem));
      break;
    }
  }
  return result;
}

}  // namespace app
