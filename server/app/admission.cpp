#include "app/admission.hpp"

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

std::string Admission::refuse(std::size_t index, std::string why) {
  if (!refused_list_.empty()) refused_list_ += ',';
  refused_list_ += std::to_string(index);
  return why;
}

std::string Admission::create_account(std::size_t index, const market::Engine& engine,
                                      const std::string& account) {
  if (replaying_) return replay_refused_.count(index) ? "refused by the live run" : "";
  if (!engine.has_account(account) && engine.account_count() >= limits_.max_accounts)
    return refuse(index, "Too many accounts: the exchange holds " +
                             std::to_string(limits_.max_accounts) + " (--max-accounts)");
  return {};
}

std::string Admission::add_shares(std::size_t index, const market::Engine& engine,
                                  const std::string& symbol) {
  if (replaying_) return replay_refused_.count(index) ? "refused by the live run" : "";
  if (!engine.has_symbol(symbol) && engine.symbol_count() >= limits_.max_symbols)
    return refuse(index, "Too many symbols: the exchange holds " +
                             std::to_string(limits_.max_symbols) + " (--max-symbols)");
  return {};
}

std::string Admission::place_order(std::size_t index, const market::Engine& engine,
                                   const std::string& account, const std::string& symbol,
                                   market::Decimal amount, market::Decimal limit) {
  if (replaying_) return replay_refused_.count(index) ? "refused by the live run" : "";
  const auto ahead = engine.look_ahead(symbol, amount, limit, executions_left_);
  if (ahead.executions > executions_left_)
    return refuse(index, "Order refused: one request may execute against at most " +
                             std::to_string(limits_.max_executions_per_request) +
                             " resting orders (--max-executions-per-request) and this order "
                             "needs more; place a smaller amount or split the request");
  if (!ahead.filled) {
    // It would rest on the book.
    if (engine.open_order_count() >= limits_.max_open_orders)
      return refuse(index, "Too many open orders on the exchange: " +
                               std::to_string(limits_.max_open_orders) +
                               " (--max-open-orders); retry later");
    if (engine.open_orders_of(account) >= limits_.max_open_orders_per_account)
      return refuse(index, "Too many open orders for this account: " +
                               std::to_string(limits_.max_open_orders_per_account) +
                               " (--max-open-orders-per-account); cancel some first");
  }
  executions_left_ -= ahead.executions;
  return {};
}

std::size_t Admission::status_bytes(std::size_t fills) {
  // An element with its echoed id and a <canceled> or <open> line; each <executed> holds two
  // decimals of at most 25 characters and a time: under 110 bytes.
  constexpr std::size_t kElement = 160, kFill = 110;
  return kElement + fills * kFill;
}

std::string Admission::reply_status(std::size_t index, std::size_t fills) {
  if (replaying_) return replay_refused_.count(index) ? "refused by the live run" : "";
  const std::size_t bytes = status_bytes(fills);
  if (bytes > reply_bytes_left_)
    return refuse(index, "Reply too large: this order's " + std::to_string(fills) +
                             " executions would take the reply past its budget (" +
                             std::to_string(limits_.max_reply_ratio) +
                             " times the request, at least " +
                             std::to_string(Limits::kReplyAllowance) + " and at most " +
                             std::to_string(limits_.max_reply_bytes) +
                             " bytes: --max-reply-ratio, --max-reply-bytes); ask for fewer "
                             "orders per request");
  reply_bytes_left_ -= bytes;
  return {};
}

}  // namespace app
