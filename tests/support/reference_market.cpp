// The reference model of docs/PROTOCOL.md: see reference_market.hpp. Each rule names the section
// it comes from. Where the document is silent the choice is marked "Assumption".
#include "support/reference_market.hpp"

#include <algorithm>

#include "wire/xml_escape.hpp"

namespace reference {

namespace {

const std::string kInvalidTif = "Invalid tif: must be GTC, IOC or FOK";  // 4.5
const std::string kFokUnfilled =                                         // 4.5
    "Fill or kill: the book cannot fill the whole amount at once within the limit; nothing was "
    "applied";
const std::string kMarketNeedsTif =  // 4.6
    "Invalid order: a market order (no limit) needs tif IOC or FOK";
const std::string kStopNeedsGtc = "Invalid order: a stop order's tif must be GTC";  // 4.7
const std::string kMissingLimit = "Missing attribute 'limit'";                      // 4.7
const std::string kNoSuchOrder = "No such order for this account";                  // 4.8
const std::string kNothingToReplace = "Order has nothing open to replace";          // 4.8
const std::string kStopNotTriggered =                                               // 4.8
    "Order is a stop that has not triggered: cancel it and place a new one";
const std::string kBudgetFlag = "--max-executions-per-request";  // section 7 names the flag

Element error(const Element& child, std::string text, TextCheck check) {
  return Element{"error", child.attrs, {}, std::move(text), check};
}

// 4.1 / 4.6: "Insufficient funds: order needs X, balance is Y", numbers canonical (section 5).
std::string insufficient_funds(Decimal needs, Decimal balance) {
  return "Insufficient funds: order needs " + needs.to_string() + ", balance is " +
         balance.to_string();
}

// Section 5: a number the client wrote, or nothing when it is not one.
std::optional<Decimal> number(const std::string* text) {
  if (text == nullptr) return std::nullopt;
  Decimal d;
  if (Decimal::parse(*text, d).has_value()) return std::nullopt;
  return d;
}

std::optional<Decimal> positive(const std::string* text) {
  auto d = number(text);
  if (!d || !d->is_positive()) return std::nullopt;
  return d;
}

Element with_id(const char* name, Attributes attrs, std::int64_t id) {
  attrs.emplace_back("id", std::to_string(id));  // 4.1: id last
  return Element{name, std::move(attrs), {}, {}, TextCheck::Exact};
}

// The one XML escape of server and client (common/wire/): the model's replies are only
// printed, for a failure's message.
std::string escape(const std::string& s) {
  std::string out;
  wire::append_xml_escaped(out, s);
  return out;
}

}  // namespace

const std::string* Element::attr(const std::string& key) const {
  for (const auto& [k, v] : attrs)
    if (k == key) return &v;
  return nullptr;
}

std::string to_xml(const Element& e) {
  std::string out = "<" + e.name;
  for (const auto& [k, v] : e.attrs) out += " " + k + "=\"" + escape(v) + "\"";
  if (e.children.empty() && e.text.empty()) return out + "/>";
  out += ">" + escape(e.text);
  for (const Element& c : e.children) out += to_xml(c);
  return out + "</" + e.name + ">";
}

Decimal Order::executed() const {
  Decimal sum;
  for (const Execution& x : executions) sum += x.shares;
  return sum;
}

Decimal Account::position(const std::string& symbol) const {
  auto it = positions.find(symbol);
  return it == positions.end() ? Decimal() : it->second;
}

const Order* ReferenceMarket::find(std::int64_t id) const {
  if (id < 1 || id > static_cast<std::int64_t>(state_.orders.size())) return nullptr;
  return &state_.orders[static_cast<std::size_t>(id - 1)];
}

std::vector<Element> ReferenceMarket::apply(const Element& request, std::int64_t now) {
  now_ = now;
  executions_left_ = limits_.max_executions_per_request;  // section 7: per request
  std::vector<Element> items;
  if (request.name == "create") {
    // Section 3: children in document order, each on its own.
    for (const Element& child : request.children) {
      if (child.name == "account") {
        items.push_back(create_account(child));
      } else {
        for (Element& e : grant_shares(child)) items.push_back(std::move(e));
      }
    }
    return items;
  }
  // Section 4: children in document order; a later child sees an earlier one's effects.
  const std::string account = request.attr("id") ? *request.attr("id") : std::string();
  for (const Element& child : request.children) items.push_back(transaction_child(account, child));
  return items;
}

// Section 3: <account id balance/>.
Element ReferenceMarket::create_account(const Element& child) {
  const std::string id = *child.attr("id");
  if (state_.accounts.count(id))  // the error carries the id alone
    return Element{"error", {{"id", id}}, {}, "Account already exists", TextCheck::Exact};
  state_.accounts[id].cash = *number(child.attr("balance"));
  return Element{"created", {{"id", id}}, {}, {}, TextCheck::Exact};
}

// Section 3: <symbol sym> with <account id>NUM</account> children, one reply each.
std::vector<Element> ReferenceMarket::grant_shares(const Element& symbol) {
  const std::string sym = *symbol.attr("sym");
  std::vector<Element> out;
  for (const Element& child : symbol.children) {
    const std::string id = *child.attr("id");
    Attributes attrs{{"sym", sym}, {"id", id}};
    auto account = state_.accounts.find(id);
    if (account == state_.accounts.end()) {
      out.push_back(Element{"error", attrs, {}, {}, TextCheck::Any});
      continue;
    }
    state_.symbols.insert(sym);
    account->second.positions[sym] += *number(&child.text);
    out.push_back(Element{"created", attrs, {}, {}, TextCheck::Exact});
  }
  return out;
}

Element ReferenceMarket::transaction_child(const std::string& account, const Element& child) {
  // Section 4: an unknown account gets an <error> for every child, with its own attributes.
  if (!state_.accounts.count(account)) return error(child, {}, TextCheck::Any);
  Element reply = child.name == "order"    ? place(account, child)
                  : child.name == "query"  ? query(account, child)
                  : child.name == "cancel" ? cancel(account, child)
                                           : replace(account, child);
  if (reply.name == "error") hit(child.name + " refused: " + reply.text.substr(0, 40));
  return reply;
}

// 4.1, 4.5, 4.6, 4.7: <order>.
Element ReferenceMarket::place(const std::string& account, const Element& child) {
  const std::string* tif_text = child.attr("tif");
  const std::string* limit_text = child.attr("limit");
  const std::string* stop_text = child.attr("stop");
  auto amount = number(child.attr("amount"));
  if (!amount || amount->is_zero()) return error(child, "Invalid amount", TextCheck::Prefix);
  Tif tif = Tif::GTC;  // 4.5: no tif is GTC
  if (tif_text) {
    if (*tif_text == "IOC") {
      tif = Tif::IOC;
    } else if (*tif_text == "FOK") {
      tif = Tif::FOK;
    } else if (*tif_text != "GTC") {
      return error(child, kInvalidTif, TextCheck::Exact);
    }
  }
  std::optional<Decimal> stop;
  if (stop_text) {  // 4.7: a positive decimal, a limit, and GTC
    stop = positive(stop_text);
    if (!stop) return error(child, "Invalid stop: ", TextCheck::Prefix);
    if (!limit_text) return error(child, kMissingLimit, TextCheck::Exact);
    if (tif != Tif::GTC) return error(child, kStopNeedsGtc, TextCheck::Exact);
  }
  // 4.6: no limit is a market order, which needs IOC or FOK.
  if (!limit_text && tif == Tif::GTC) return error(child, kMarketNeedsTif, TextCheck::Exact);
  std::optional<Decimal> limit;
  if (limit_text) {
    limit = positive(limit_text);
    if (!limit) return error(child, "Invalid limit: ", TextCheck::Prefix);
  }
  // 4.1: an order on a symbol never created is rejected (text not given).
  const std::string symbol = *child.attr("sym");
  if (!state_.symbols.count(symbol)) return error(child, {}, TextCheck::Any);

  Order o;
  o.account = account;
  o.symbol = symbol;
  o.buy = amount->is_positive();
  o.amount = *amount;
  o.limit = limit;
  o.stop = stop;
  o.tif = tif;
  o.open = amount->abs();

  // 4.5 "Checks, in this order", step 2, and section 7: the budget first, counted by the resting
  // orders the order crosses for its whole amount (a market IOC buy's and a stop's are counted
  // as they execute); once a child is refused for it, the request has nothing left.
  const bool market_ioc_buy = o.buy && !o.limit && tif == Tif::IOC;
  if (!stop && !market_ioc_buy && resting_orders_crossed(o) > executions_left_) {
    executions_left_ = 0;
    hit("order over the budget before matching");
    return error(child, kBudgetFlag, TextCheck::Contains);
  }
  // Step 3: what the order reserves; for FOK the book fills the whole amount; for a market FOK
  // buy the balance covers the cost.
  const Account& acct = state_.accounts.at(account);
  std::optional<Element> refused;
  if (o.buy && o.limit && o.open * *o.limit > acct.cash) {
    refused = error(child, insufficient_funds(o.open * *o.limit, acct.cash), TextCheck::Exact);
  } else if (!o.buy && o.open > acct.position(symbol)) {
    refused = error(child, "Insufficient shares", TextCheck::Prefix);
  } else if (tif == Tif::FOK && fillable(o) < o.open) {
    refused = error(child, kFokUnfilled, TextCheck::Exact);
  } else if (tif == Tif::FOK && o.buy && !o.limit && market_buy_cost(o) > acct.cash) {
    refused = error(child, insufficient_funds(market_buy_cost(o), acct.cash), TextCheck::Exact);
  }
  // Section 7: an order that would rest (a GTC order with a rest, or a stop, which waits) is
  // refused while its account or the exchange has as many resting orders as allowed.
  // Assumption (question 2): counted before the order matches.
  const auto rest_limit = tif == Tif::GTC ? open_order_limit(account) : std::nullopt;
  if (refused) {
    // Assumption (question 1 of the report): when the execution budget (or an open-order
    // limit) would also refuse it, either refusal may be the one the reply names.
    if (rest_limit) refused->check = TextCheck::Any;
    return *refused;
  }
  if (stop && rest_limit) return error(child, *rest_limit, TextCheck::Contains);

  return within_budget(child, [&] {
    Account& a = state_.accounts.at(account);
    o.id = state_.next_id++;  // 4.1: ids in order; a refused order gets none
    // 4.1: a limit buy reserves amount x limit, a sell its shares; 4.6: a market buy nothing.
    if (o.buy && o.limit) a.cash -= o.open * *o.limit;
    if (!o.buy) a.positions[symbol] -= o.open;
    Attributes attrs = child.attrs;
    const std::int64_t id = o.id;
    if (o.stop) {
      o.waiting = true;  // 4.7: not on the book until triggered
      state_.orders.push_back(o);
      return with_id("opened", attrs, id);
    }
    o.seq = state_.next_seq++;
    state_.orders.push_back(o);
    const std::size_t index = state_.orders.size() - 1;
    match(index);
    if (rest_limit && state_.orders[index].open.is_positive()) rest_refusal_ = rest_limit;
    end_incoming(index);
    enter_triggered_stops();  // 4.7: after the incoming order has finished
    return with_id("opened", attrs, id);
  });
}

// 4.3: <query id/>; an account sees only its own orders.
Element ReferenceMarket::query(const std::string& account, const Element& child) {
  const Order* o = own_order(account, *child.attr("id"));
  if (!o) return error(child, {}, TextCheck::Any);
  return Element{"status", {{"id", *child.attr("id")}}, status_children(*o), {}, TextCheck::Exact};
}

// 4.4: <cancel id/>, of an open remainder or (4.7) of a waiting stop's whole amount.
Element ReferenceMarket::cancel(const std::string& account, const Element& child) {
  Order* o = own_order(account, *child.attr("id"));
  if (!o) return error(child, {}, TextCheck::Any);
  if (o->waiting) {
    hit("waiting stop canceled");
    o->waiting = false;
    o->open = o->amount.abs();  // the reservation it made at placement goes back
  } else if (!o->on_book || o->open.is_zero()) {
    return error(child, {}, TextCheck::Any);  // nothing open
  }
  refund_open(*o);
  o->canceled = o->open;
  o->canceled_time = now_;
  o->open = Decimal();
  o->on_book = false;
  return Element{
      "canceled", {{"id", *child.attr("id")}}, status_children(*o), {}, TextCheck::Exact};
}

// 4.8: <replace id shares limit/>.
Element ReferenceMarket::replace(const std::string& account, const Element& child) {
  auto shares = positive(child.attr("shares"));
  if (!shares) return error(child, "Invalid shares: ", TextCheck::Prefix);
  auto limit = positive(child.attr("limit"));
  if (!limit) return error(child, "Invalid limit: ", TextCheck::Prefix);
  Order* found = own_order(account, *child.attr("id"));
  if (!found) return error(child, kNoSuchOrder, TextCheck::Exact);
  if (found->waiting) return error(child, kStopNotTriggered, TextCheck::Exact);
  // Assumption: a canceled stop that never triggered no longer "waits", so it has nothing open.
  if (!found->on_book || found->open.is_zero())
    return error(child, kNothingToReplace, TextCheck::Exact);

  const std::size_t index = static_cast<std::size_t>(found->id - 1);
  const Order& o = state_.orders[index];
  const Account& acct = state_.accounts.at(account);
  // The reservation becomes S x L (buy) or S shares (sell); short of the difference: refused.
  const Decimal extra = o.buy ? *shares * *limit - o.open * *o.limit : *shares - o.open;
  // Priority: kept only for the same limit and a remainder no larger (equal changes nothing).
  const bool keeps_priority = *limit == *o.limit && *shares <= o.open;
  const char* how = !keeps_priority     ? "replace loses priority"
                    : *shares == o.open ? "replace changes nothing"
                                        : "replace keeps priority";
  std::optional<Element> refused;
  if (o.buy && extra > acct.cash) {
    refused = error(child, insufficient_funds(extra, acct.cash), TextCheck::Exact);
  } else if (!o.buy && extra > acct.position(o.symbol)) {
    refused = error(child, "Insufficient shares", TextCheck::Prefix);
  }
  if (refused) {
    Order moved = o;
    moved.limit = limit;
    moved.open = *shares;
    if (!keeps_priority && resting_orders_crossed(moved) > executions_left_)
      refused->check = TextCheck::Any;  // as for an order (question 1)
    return *refused;
  }

  return within_budget(child, [&] {
    Order& r = state_.orders[index];
    Account& a = state_.accounts.at(account);
    if (r.buy) {
      a.cash -= extra;
    } else {
      a.positions[r.symbol] -= extra;
    }
    hit(how);
    const Decimal executed = r.executed();
    r.amount = r.buy ? executed + *shares : -(executed + *shares);  // executed + S, signed
    r.open = *shares;
    if (!keeps_priority) {
      // Leaves the book and enters again at L as if placed now, and may match at once.
      r.on_book = false;
      r.limit = limit;
      r.seq = state_.next_seq++;
      match(index);
      end_incoming(index);
      enter_triggered_stops();
      if (child_executions_ > 0) hit("replace matches at once");
    }
    return Element{"replaced", child.attrs, {}, {}, TextCheck::Exact};
  });
}

// 4.2: the resting orders an incoming order may match: open, on the same symbol, on the other
// side, and within its limit (a market order has none, 4.6).
bool ReferenceMarket::crosses(const Order& incoming, const Order& resting) const {
  if (!resting.on_book || resting.symbol != incoming.symbol || resting.buy == incoming.buy)
    return false;
  if (!incoming.limit) return true;
  return incoming.buy ? *resting.limit <= *incoming.limit : *resting.limit >= *incoming.limit;
}

// 4.2: the best price first (lowest sell for a buy, highest buy for a sell), then the earliest.
std::optional<std::size_t> ReferenceMarket::best_counter(const Order& incoming) const {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < state_.orders.size(); ++i) {
    const Order& r = state_.orders[i];
    if (!crosses(incoming, r)) continue;
    if (!best) {
      best = i;
      continue;
    }
    const Order& b = state_.orders[*best];
    const bool better_price = incoming.buy ? *r.limit < *b.limit : *r.limit > *b.limit;
    if (better_price || (*r.limit == *b.limit && r.seq < b.seq)) best = i;
  }
  return best;
}

// 4.2: match the incoming order until it is filled or nothing crosses; 4.6: a market buy stops
// at the first execution whose cost is more than the balance at that moment.
void ReferenceMarket::match(std::size_t incoming) {
  while (state_.orders[incoming].open.is_positive()) {
    auto counter = best_counter(state_.orders[incoming]);
    if (!counter) return;
    const Order& in = state_.orders[incoming];
    const Order& resting = state_.orders[*counter];
    const Decimal shares = market::min(in.open, resting.open);
    const Decimal price = *resting.limit;  // the resting order's limit
    // Assumption: "the balance at that moment" is before this execution's own proceeds (which
    // matter only when the market buy trades with its own account's sell).
    if (in.buy && !in.limit && shares * price > state_.accounts.at(in.account).cash) {
      hit("market buy stopped for cash");
      return;
    }
    if (in.buy) {
      execute(incoming, *counter, shares, price);
    } else {
      execute(*counter, incoming, shares, price);
    }
  }
}

// 4.2: one execution, atomic: the seller is credited, the buyer gets the shares and (4.2) the
// difference between its reserved limit and the price back; a market buy (4.6) pays the price.
void ReferenceMarket::execute(std::size_t buy, std::size_t sell, Decimal shares, Decimal price) {
  Order& b = state_.orders[buy];
  Order& s = state_.orders[sell];
  Account& buyer = state_.accounts.at(b.account);
  Account& seller = state_.accounts.at(s.account);
  seller.cash += shares * price;
  buyer.positions[b.symbol] += shares;
  if (b.limit) {
    buyer.cash += shares * (*b.limit - price);
  } else {
    buyer.cash -= shares * price;
  }
  for (Order* o : {&b, &s}) {
    o->open -= shares;
    o->executions.push_back(Execution{shares, price, now_});
    if (o->open.is_zero()) o->on_book = false;
  }
  ++child_executions_;
  hit(b.account == s.account ? "self trade" : "execution");
  if (!b.limit || !s.limit) hit("market order executed");
  trigger_stops(b.symbol, price);
}

// 4.7: a waiting buy stop triggers at a price >= its stop, a sell stop at <= its stop; those one
// execution triggers queue by id (the vector is in id order) behind those triggered before.
void ReferenceMarket::trigger_stops(const std::string& symbol, Decimal price) {
  const std::size_t queued = triggered_.size();
  for (std::size_t i = 0; i < state_.orders.size(); ++i) {
    Order& o = state_.orders[i];
    if (!o.waiting || o.symbol != symbol) continue;
    if (o.buy ? price >= *o.stop : price <= *o.stop) {
      o.waiting = false;
      triggered_.push_back(i);
      ++child_triggers_;
      hit(entering_stops_ ? "stop triggered by a stop" : "stop triggered");
    }
  }
  if (triggered_.size() > queued + 1) hit("stops triggered by one execution");
}

// 4.7: triggered stops enter one at a time, first in first out, each as a GTC limit order with
// the time priority of its entry (after every order on the book), matching at once.
void ReferenceMarket::enter_triggered_stops() {
  entering_stops_ = true;
  while (!triggered_.empty()) {
    const std::size_t i = triggered_.front();
    triggered_.pop_front();
    state_.orders[i].seq = state_.next_seq++;
    match(i);
    end_incoming(i);
  }
  entering_stops_ = false;
}

// 4.1: a GTC order's rest rests; 4.5/4.6: an IOC, FOK or market order's rest is canceled in the
// same step and its reservation goes back.
void ReferenceMarket::end_incoming(std::size_t incoming) {
  Order& o = state_.orders[incoming];
  if (o.open.is_zero()) return;
  if (o.tif == Tif::GTC) {
    o.on_book = true;
    return;
  }
  hit("rest of an IOC, FOK or market order canceled");
  refund_open(o);
  o.canceled = o.open;
  o.canceled_time = now_;
  o.open = Decimal();
}

// 4.4/4.5: the reservation of an open remainder goes back: a limit buy open x limit, a sell its
// shares; a market buy reserved nothing.
void ReferenceMarket::refund_open(Order& order) {
  Account& a = state_.accounts.at(order.account);
  if (!order.buy) {
    a.positions[order.symbol] += order.open;
  } else if (order.limit) {
    a.cash += order.open * *order.limit;
  }
}

// The resting orders `incoming` crosses, best first (for the look-aheads; matching itself
// scans with best_counter).
std::vector<const Order*> ReferenceMarket::counters_in_priority(const Order& incoming) const {
  std::vector<const Order*> out;
  for (const Order& r : state_.orders)
    if (crosses(incoming, r)) out.push_back(&r);
  std::stable_sort(out.begin(), out.end(), [&](const Order* x, const Order* y) {
    if (*x->limit != *y->limit) return incoming.buy ? *x->limit < *y->limit : *x->limit > *y->limit;
    return x->seq < y->seq;
  });
  return out;
}

// 4.5: what the book can fill at once within the limit (all it crosses).
Decimal ReferenceMarket::fillable(const Order& incoming) const {
  Decimal sum;
  for (const Order& r : state_.orders)
    if (crosses(incoming, r)) sum += r.open;
  return sum;
}

// 4.6: the cost of the executions that would fill a market buy, best prices first.
Decimal ReferenceMarket::market_buy_cost(const Order& incoming) const {
  Decimal left = incoming.open;
  Decimal cost;
  for (const Order* r : counters_in_priority(incoming)) {
    if (!left.is_positive()) break;
    const Decimal take = market::min(left, r->open);
    cost += take * *r->limit;
    left -= take;
  }
  return cost;
}

// Section 7: the resting orders the order would execute against for its whole amount, ignoring
// whether it can pay (used only to tell when the budget refusal may be the one named).
std::size_t ReferenceMarket::resting_orders_crossed(const Order& incoming) const {
  Decimal left = incoming.open;
  std::size_t count = 0;
  for (const Order* r : counters_in_priority(incoming)) {
    if (!left.is_positive()) break;
    left -= market::min(left, r->open);
    ++count;
  }
  return count;
}

// Section 7: an order or replace whose executions and triggered stops (and theirs) would come to
// more than the request has left is refused and nothing of it is applied.
template <typename Step>
Element ReferenceMarket::within_budget(const Element& child, Step step) {
  const State saved = state_;
  child_executions_ = 0;
  child_triggers_ = 0;
  triggered_.clear();
  rest_refusal_.reset();
  Element reply = step();
  // Section 7: each execution and each triggered stop counts one.
  const std::size_t spent = child_executions_ + child_triggers_;
  if (rest_refusal_) {
    state_ = saved;
    hit("order over an open-order limit");
    // Over the execution budget too: either may be named (question 1).
    const bool both = spent > executions_left_;
    return error(child, both ? std::string() : *rest_refusal_,
                 both ? TextCheck::Any : TextCheck::Contains);
  }
  if (spent > executions_left_) {
    hit(state_.orders.size() > saved.orders.size() ? "order over the budget"
                                                   : "replace over the budget");
    if (child_triggers_ > 0) hit("over the budget with triggered stops");
    state_ = saved;
    executions_left_ = 0;  // section 7: the request has nothing left
    return error(child, kBudgetFlag, TextCheck::Contains);
  }
  executions_left_ -= spent;
  return reply;
}

// 4.3: <open> (the unfilled rest, not canceled), <waiting> alone for an untriggered stop,
// <canceled>, then one <executed> per execution, oldest first. Numbers canonical (section 5).
std::vector<Element> ReferenceMarket::status_children(const Order& o) const {
  std::vector<Element> out;
  if (o.waiting) {
    out.push_back(Element{"waiting",
                          {{"shares", o.amount.abs().to_string()}, {"stop", o.stop->to_string()}},
                          {},
                          {},
                          TextCheck::Exact});
    return out;
  }
  if (o.on_book && o.open.is_positive())
    out.push_back(Element{"open", {{"shares", o.open.to_string()}}, {}, {}, TextCheck::Exact});
  if (o.canceled.is_positive())
    out.push_back(
        Element{"canceled",
                {{"shares", o.canceled.to_string()}, {"time", std::to_string(o.canceled_time)}},
                {},
                {},
                TextCheck::Exact});
  for (const Execution& x : o.executions)
    out.push_back(Element{"executed",
                          {{"shares", x.shares.to_string()},
                           {"price", x.price.to_string()},
                           {"time", std::to_string(x.time)}},
                          {},
                          {},
                          TextCheck::Exact});
  return out;
}

// Section 7: the flag an order that would rest is over, or nothing. Waiting stops count.
std::optional<std::string> ReferenceMarket::open_order_limit(const std::string& account) const {
  std::size_t all = 0;
  std::size_t own = 0;
  for (const Order& o : state_.orders) {
    if (!o.on_book && !o.waiting) continue;
    ++all;
    if (o.account == account) ++own;
  }
  if (all >= limits_.max_open_orders) return std::string("--max-open-orders");
  if (own >= limits_.max_open_orders_per_account)
    return std::string("--max-open-orders-per-account");
  return std::nullopt;
}

// 4.3: only the account's own orders; any other id is as if it did not exist.
Order* ReferenceMarket::own_order(const std::string& account, const std::string& id_text) {
  if (id_text.empty() || id_text.size() > 15 ||
      !std::all_of(id_text.begin(), id_text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return nullptr;
  const std::int64_t id = std::stoll(id_text);
  if (id < 1 || id > static_cast<std::int64_t>(state_.orders.size())) return nullptr;
  Order& o = state_.orders[static_cast<std::size_t>(id - 1)];
  return o.account == account ? &o : nullptr;
}

}  // namespace reference
