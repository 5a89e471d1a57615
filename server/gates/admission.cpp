#include "gates/admission.hpp"

#include <algorithm>
#include <stdexcept>

namespace app {

Admission Admission::live(const Limits& limits, std::size_t request_bytes) {
  Admission a;
  a.limits_ = limits;
  a.executions_left_ = limits.max_executions_per_request;
  a.reply_bytes_left_ = limits.reply_bound().for_request(request_bytes);
  return a;
}

Admission Admission::replay(const std::string& refused) {
  Admission a;
  a.replaying_ = true;
  std::size_t value = 0;
  bool digits = false;
  for (std::size_t i = 0; i <= refused.size(); ++i) {
    if (i == refused.size() || refused[i] == ',') {
      if (!digits) {
        if (refused.empty()) break;
        throw std::invalid_argument("malformed list of refused children: '" + refused + "'");
      }
      a.replay_refused_.insert(value);
      value = 0;
      digits = false;
    } else if (refused[i] >= '0' && refused[i] <= '9' && value < 100000000) {
      value = value * 10 + static_cast<std::size_t>(refused[i] - '0');
      digits = true;
    } else {
      throw std::invalid_argument("malformed list of refused children: '" + refused + "'");
    }
  }
  return a;
}

market::Reject Admission::refuse(std::size_t index, market::Reason reason, std::size_t limit) {
  if (!refused_list_.empty()) refused_list_ += ',';
  refused_list_ += std::to_string(index);
  market::Reject why(reason);
  why.limit = limit;
  return why;
}

std::optional<market::Reject> Admission::as_live_run(std::size_t index) const {
  if (!replay_refused_.count(index)) return std::nullopt;
  return market::Reject(market::Reason::RefusedByLiveRun);
}

std::optional<market::Reject> Admission::create_account(std::size_t index,
                                                        const market::Engine& engine,
                                                        const std::string& account) {
  if (replaying_) return as_live_run(index);
  if (!engine.has_account(account) && engine.account_count() >= limits_.max_accounts)
    return refuse(index, market::Reason::TooManyAccounts, limits_.max_accounts);
  return std::nullopt;
}

std::optional<market::Reject> Admission::add_shares(std::size_t index, const market::Engine& engine,
                                                    const std::string& symbol) {
  if (replaying_) return as_live_run(index);
  if (!engine.has_symbol(symbol) && engine.symbol_count() >= limits_.max_symbols)
    return refuse(index, market::Reason::TooManySymbols, limits_.max_symbols);
  return std::nullopt;
}

std::optional<market::Reject> Admission::place_order(std::size_t index,
                                                     const market::Engine& engine,
                                                     const std::string& account,
                                                     const std::string& symbol,
                                                     const market::OrderTerms& terms) {
  if (replaying_) return as_live_run(index);
  bool rests = terms.stop.has_value();  // a stop waits; it executes nothing now
  if (!terms.stop) {
    // A market IOC buy's executions depend on what it can pay: the engine counts those. (A
    // market FOK buy executes all it crosses, or is refused.)
    const bool market_buy = terms.is_market() && terms.amount.is_positive() &&
                            terms.tif == market::TimeInForce::ImmediateOrCancel;
    const auto ahead = market_buy
                           ? market::OrderBook::Lookahead{}
                           : engine.look_ahead(symbol, terms.amount, terms.limit, executions_left_);
    if (ahead.executions > executions_left_) return over_budget(index);
    rests = terms.tif == market::TimeInForce::GoodTillCanceled && !ahead.filled;
  }
  if (rests) {
    if (engine.open_order_count() >= limits_.max_open_orders)
      return refuse(index, market::Reason::TooManyOpenOrders, limits_.max_open_orders);
    if (engine.open_orders_of(account) >= limits_.max_open_orders_per_account)
      return refuse(index, market::Reason::TooManyOpenOrdersForAccount,
                    limits_.max_open_orders_per_account);
  }
  return std::nullopt;
}

std::optional<market::Reject> Admission::replace(std::size_t index) {
  if (replaying_) return as_live_run(index);
  return std::nullopt;
}

std::size_t Admission::execution_budget() const {
  return replaying_ ? market::Engine::kNoBudget : executions_left_;
}

void Admission::spent(std::size_t executions) {
  if (!replaying_) executions_left_ -= std::min(executions, executions_left_);
}

market::Reject Admission::engine_refused(std::size_t index, market::Reject why) {
  if (replaying_ || why.reason != market::Reason::TooManyExecutions) return why;
  return over_budget(index);
}

market::Reject Admission::over_budget(std::size_t index) {
  // The request has nothing left: a child refused here may have executed up to the whole
  // budget before it was undone, and the next one must not be allowed to do that again (10,000
  // children would hold the engine for 10,000 budgets).
  executions_left_ = 0;
  return refuse(index, market::Reason::TooManyExecutions, limits_.max_executions_per_request);
}

std::size_t Admission::status_bytes(std::size_t fills) {
  // An element with its echoed id and a <canceled> or <open> line; each <executed> holds two
  // decimals of at most 25 characters and a time: under 110 bytes.
  constexpr std::size_t kElement = 160, kFill = 110;
  return kElement + fills * kFill;
}

std::optional<market::Reject> Admission::reply_status(std::size_t index, std::size_t fills) {
  if (replaying_) return as_live_run(index);
  const std::size_t bytes = status_bytes(fills);
  if (bytes > reply_bytes_left_) {
    market::Reject why = refuse(index, market::Reason::ReplyTooLarge, limits_.max_reply_bytes);
    why.count = fills;
    why.ratio = limits_.max_reply_ratio;
    why.allowance = Limits::kReplyAllowance;
    return why;
  }
  reply_bytes_left_ -= bytes;
  return std::nullopt;
}

}  // namespace app
