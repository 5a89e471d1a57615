#include "gates/settings.hpp"

#include <string>

namespace app {

namespace {
const std::string kLimits = "Request limits";
}  // namespace

void declare_settings(util::Settings& s, Limits& l) {
  s.add("max-accounts", kLimits, &l.max_accounts)
      .at_least(1)
      .help("most accounts the exchange holds; creating one more is refused");
  s.add("max-symbols", kLimits, &l.max_symbols)
      .at_least(1)
      .help("most symbols the exchange holds; creating one more is refused");
  s.add("max-open-orders", kLimits, &l.max_open_orders)
      .at_least(1)
      .help(
          "most orders resting on all books together (waiting stops included); an order that "
          "would rest beyond it is refused");
  s.add("max-open-orders-per-account", kLimits, &l.max_open_orders_per_account)
      .at_least(1)
      .help("most resting orders of one account; an order that would rest beyond it is refused");
  s.add("max-executions-per-request", kLimits, &l.max_executions_per_request)
      .at_least(1)
      .help(
          "most executions one request may cause, those of the stops it triggers included, "
          "each triggered stop counting one more (bounds the time it holds the engine and the "
          "rows it projects); an order or replace that would go past it is refused and "
          "nothing of it is applied");
  s.add("max-reply-ratio", kLimits, &l.max_reply_ratio)
      .at_least(1)
      .help(
          "a reply may be this many times its request's size (64 KiB are always allowed); a "
          "<query> or <cancel> whose status would go past it is refused");
  s.add("max-reply-bytes", kLimits, &l.max_reply_bytes)
      .at_least(static_cast<long long>(Limits::kReplyAllowance))
      .unit("bytes")
      .help("the largest reply, whatever the request's size");
}

}  // namespace app
