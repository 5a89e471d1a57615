#include "gates/authorize.hpp"

namespace app {
namespace {

Refused refused(auth::Refusal why, market::Reason reason, const std::string& principal,
                const std::string& value = {}) {
  market::Reject reject(reason);
  reject.name = principal;
  reject.value = value;
  return {why, std::move(reject)};
}

}  // namespace

std::optional<Refused> authorize(const auth::Principals& table, const auth::Caller& caller,
                                 const protocol::Command& cmd) {
  const auth::Principal* principal = table.find(caller.principal);
  if (!principal)
    return refused(auth::Refusal::UnknownPrincipal, market::Reason::UnknownPrincipal,
                   caller.principal);
  if (principal->generation != caller.generation)
    return refused(auth::Refusal::SessionEnded, market::Reason::SessionEnded, caller.principal);
  if (cmd.kind == protocol::Command::Kind::Create) {
    if (!principal->admin)
      return refused(auth::Refusal::CreateNotPermitted, market::Reason::NotPermittedCreate,
                     caller.principal);
    return std::nullopt;
  }
  if (!principal->trade)
    return refused(auth::Refusal::TradeNotPermitted, market::Reason::NotPermittedTrade,
                   caller.principal);
  if (!principal->holds(cmd.account))
    return refused(auth::Refusal::AccountNotPermitted, market::Reason::NotPermittedAccount,
                   caller.principal, cmd.account);
  return std::nullopt;
}

protocol::Result refuse_every_child(const protocol::Command& cmd, const market::Reject& why) {
  protocol::Result result;
  auto add = [&](const protocol::Attributes& echo) {
    protocol::ResultItem item;
    item.kind = protocol::ResultItem::Kind::Error;
    item.attrs = echo;
    item.reject = why;
    result.items.push_back(std::move(item));
  };
  for (const auto& c : cmd.creates) add(c.echo);
  for (const auto& t : cmd.transactions) add(t.echo);
  // A childless <create> still hears why.
  return result.items.empty() ? protocol::Result::failure(why) : result;
}

}  // namespace app
