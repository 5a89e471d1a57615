// Placing, replacing and matching orders: docs/PROTOCOL.md, sections 4.1, 4.2 and 4.5-4.8.
// Each call first checks everything it can without changing anything; what only matching can
// tell (that the stops it triggers execute past its budget) is undone by rolling its step back
// (market/engine_steps.cpp).
#include <algorithm>
#include <deque>
#include <stdexcept>

#include "market/engine.hpp"

namespace market {

struct Engine::Run {
  explicit Run(std::size_t b) : budget(b) {}
  // What the call may do: executions and triggered stops, one each (a stop that enters and
  // executes nothing still costs a row and time under the lock).
  std::size_t budget;
  std::size_t executions = 0;  // executions and triggered stops so far
  bool over_budget = false;
  bool spend() {
    if (++executions > budget) over_budget = true;
    return !over_budget;
  }
  std::deque<Order*> triggered;  // stops whose trigger came, in the order they enter
  std::vector<Order*> found;     // scratch: the stops one execution triggers
};

namespace {

void require(bool holds, const char* what) {
  if (!holds)
    throw std::invalid_argument(std::string("market::Engine: precondition failed: ") + what);
}

Reject short_of(Reason reason, Decimal needed, Decimal held) {
  Reject r(reason);
  r.needed = needed;
  r.held = held;
  return r;
}

Decimal shares_held(const Account& acct, const std::string& symbol) {
  auto pos = acct.positions.find(symbol);
  return pos == acct.positions.end() ? Decimal() : pos->second.amount;
}

}  // namespace

Engine::Placed Engine::place(const std::string& account, const std::string& symbol,
                             const OrderTerms& terms, std::int64_t now, Effects& fx,
                             std::size_t budget) {
  require(!terms.amount.is_zero(), "an order's amount must not be zero");
  require(!terms.limit.is_negative(), "an order's limit must not be negative");
  require(!terms.is_market() || terms.tif != TimeInForce::GoodTillCanceled,
          "a market order needs IOC or FOK");
  require(!terms.stop || (terms.stop->is_positive() && !terms.is_market() &&
                          terms.tif == TimeInForce::GoodTillCanceled),
          "a stop order needs a positive stop, a limit and GTC");
  auto acct_it = accounts_.find(account);
  if (acct_it == accounts_.end()) return {Reject(Reason::UnknownAccount)};
  auto book_it = books_.find(symbol);
  if (book_it == books_.end()) return {Reject(Reason::UnknownSymbol)};
  Account& acct = acct_it->second;
  OrderBook& book = book_it->second;
  if (auto why = check_order(acct, book, symbol, terms, budget)) return {std::move(why)};

  begin_step(fx);
  Order& order = open_order(acct, account, symbol, terms, now, fx);
  Run run(budget);
  if (order.stop) {
    link(book, order);  // it waits for its trigger
    count_open(order, 1);
  } else {
    match(book, order, now, fx, run);
    if (!run.over_budget) settle(book, order, terms.tif == TimeInForce::GoodTillCanceled, now, fx);
  }
  if (!run.over_budget) {
    record(order, fx);
    enter_triggered(book, now, fx, run);
  }
  if (run.over_budget) {
    roll_back(fx);
    return {Reject(Reason::TooManyExecutions)};
  }
  end_step();
  fx.next_priority = next_priority_;
  return {std::nullopt, order.id, run.executions};
}

std::optional<Reject> Engine::check_order(const Account& acct, const OrderBook& book,
                                          const std::string& symbol, const OrderTerms& terms,
                                          std::size_t budget) const {
  const bool buy = terms.amount.is_positive();
  const Decimal shares = terms.amount.abs();
  if (buy && !terms.is_market()) {
    const Decimal cost = shares * terms.limit;
    if (acct.cash < cost) return short_of(Reason::InsufficientFunds, cost, acct.cash);
  } else if (!buy) {
    const Decimal held = shares_held(acct, symbol);
    if (held < shares) return short_of(Reason::InsufficientShares, shares, held);
  }
  if (terms.tif != TimeInForce::FillOrKill) return std::nullopt;
  const auto ahead = book.look_ahead(buy, terms.limit, shares, budget);
  if (ahead.executions > budget) return Reject(Reason::TooManyExecutions);
  if (!ahead.filled) return Reject(Reason::FillOrKillUnfilled);
  // A market buy reserves nothing: a FOK one must be able to pay for all of it (PROTOCOL 4.6).
  if (buy && terms.is_market()) {
    const auto cost = book.look_ahead(buy, terms.limit, shares, budget, &acct.cash);
    if (cost.over_cap) return short_of(Reason::InsufficientFunds, cost.cost, acct.cash);
  }
  return std::nullopt;
}

Order& Engine::open_order(Account& acct, const std::string& account, const std::string& symbol,
                          const OrderTerms& terms, std::int64_t now, Effects& fx) {
  const Decimal shares = terms.amount.abs();
  // Reserve first: the reservation and the opening of the order are one step. A market buy
  // reserves nothing: it pays each execution as it happens.
  if (terms.amount.is_positive() && !terms.is_market()) {
    add_cash(acct, -(shares * terms.limit));
    record(acct, account, fx);
  } else if (terms.amount.is_negative()) {
    Position& pos = position_of(acct, symbol);
    add_shares_held(acct, pos, -shares);
    record_position(account, symbol, pos, fx);
  }
  const OrderId id = next_order_id_++;
  Order& order = new_order(id);
  order.id = id;
  order.owner = &acct;
  order.account = account;
  order.symbol = symbol;
  order.amount = terms.amount;
  order.limit = terms.limit;
  order.open = shares;
  order.created_at = now;
  order.priority = next_priority_++;
  order.stop = terms.stop;
  return order;
}

void Engine::match(OrderBook& book, Order& order, std::int64_t now, Effects& fx, Run& run) {
  while (order.open.is_positive()) {
    Order* resting = book.best_match(order);
    if (!resting) break;
    const Decimal shares = min(order.open, resting->open);
    const Decimal price = resting->limit;  // the resting order sets the price
    // A market buy stops at the first execution it cannot pay in full (PROTOCOL 4.6).
    if (order.is_market() && order.is_buy() && order.owner->cash < shares * price) break;
    if (!run.spend()) return;
    if (order.is_buy())
      execute(order, *resting, shares, price, now, fx);
    else
      execute(*resting, order, shares, price, now, fx);
    if (!resting->open.is_positive()) {
      unlink(book, *resting);
      count_open(*resting, -1);
    }
    record(*resting, fx);
    if (!book.has_stops()) continue;
    // The stops this execution triggers queue in the order they were placed (PROTOCOL 4.7).
    // One more than the budget has left is enough to know that the call is over it.
    run.found.clear();
    const std::size_t left = run.budget - std::min(run.budget, run.executions);
    book.triggered_by(price, left == kNoBudget ? left : left + 1, run.found);
    std::sort(run.found.begin(), run.found.end(),
              [](const Order* a, const Order* b) { return a->id < b->id; });
    for (Order* stop : run.found) {
      if (!run.spend()) return;
      unlink(book, *stop);
      run.triggered.push_back(stop);
    }
  }
}

void Engine::settle(OrderBook& book, Order& order, bool rests, std::int64_t now, Effects& fx) {
  if (!order.open.is_positive()) return;
  if (rests) {
    link(book, order);
    count_open(order, 1);
    return;
  }
  // IOC, FOK and market orders never rest: the rest is canceled in the same step.
  release(order, fx);
  touch(order);
  order.canceled_at = now;
}

void Engine::enter_triggered(OrderBook& book, std::int64_t now, Effects& fx, Run& run) {
  while (!run.triggered.empty() && !run.over_budget) {
    Order& order = *run.triggered.front();
    run.triggered.pop_front();
    // A limit order now, with the time priority of its trigger; it was counted open already.
    touch(order);
    order.stop.reset();
    order.priority = next_priority_++;
    match(book, order, now, fx, run);
    if (run.over_budget) return;
    if (order.open.is_positive())
      link(book, order);
    else
      count_open(order, -1);
    record(order, fx, /*revised=*/true);
  }
}

void Engine::execute(Order& buy, Order& sell, Decimal shares, Decimal price, std::int64_t now,
                     Effects& fx) {
  Account& buyer = *buy.owner;
  Account& seller = *sell.owner;
  add_cash(seller, shares * price);
  if (buy.is_market())
    add_cash(buyer, -(shares * price));  // it reserved nothing: it pays now
  else
    add_cash(buyer, shares * (buy.limit - price));  // what its reservation did not need
  touch(buy);
  touch(sell);
  // A buy's position may not exist before its first fill.
  if (!buy.position) buy.position = &position_of(buyer, buy.symbol);
  Position& pos = *buy.position;
  add_shares_held(buyer, pos, shares);
  buy.open -= shares;
  sell.open -= shares;
  buy.fills.push_back({shares, price, now});
  sell.fills.push_back({shares, price, now});

  record(seller, sell.account, fx);
  if (buy.account != sell.account) record(buyer, buy.account, fx);
  record_position(buy.account, buy.symbol, pos, fx);
  fx.executions.push_back({next_execution_id_++, buy.id, sell.id, shares, price, now});
}

std::optional<Reject> Engine::replace(const std::string& account, OrderId id, Decimal shares,
                                      Decimal limit, std::int64_t now, Effects& fx,
                                      std::size_t& executions, std::size_t budget) {
  require(shares.is_positive(), "a replace's shares must be positive");
  require(limit.is_positive(), "a replace's limit must be positive");
  executions = 0;
  auto it = orders_.find(id);
  if (it == orders_.end() || it->second.account != account) return Reject(Reason::NoSuchOrder);
  Order& order = it->second;
  if (!order.is_open()) return Reject(Reason::NothingToReplace);
  if (order.stop) return Reject(Reason::StopNotTriggered);
  Account& acct = *order.owner;
  const bool buy = order.is_buy();
  // The reservation becomes shares x limit (a buy) or shares (a sell): what more it takes.
  const Decimal extra = buy ? shares * limit - order.open * order.limit : shares - order.open;
  const Decimal held = buy ? acct.cash : shares_held(acct, order.symbol);
  if (extra > held)
    return short_of(buy ? Reason::InsufficientFunds : Reason::InsufficientShares, extra, held);
  if (limit == order.limit && shares == order.open) return std::nullopt;  // nothing changes

  begin_step(fx);
  if (buy) {
    add_cash(acct, -extra);
    record(acct, account, fx);
  } else {
    Position& pos = position_of(acct, order.symbol);
    add_shares_held(acct, pos, -extra);
    record_position(account, order.symbol, pos, fx);
  }
  OrderBook& book = books_.at(order.symbol);
  // Only the same limit with a smaller remainder keeps the order's place (PROTOCOL 4.8).
  const bool keeps_place = limit == order.limit && shares < order.open;
  if (!keeps_place) unlink(book, order);
  touch(order);
  const Decimal executed = order.amount.abs() - order.open;
  order.amount = buy ? executed + shares : -(executed + shares);
  order.open = shares;
  Run run(budget);
  if (!keeps_place) {
    order.limit = limit;
    order.priority = next_priority_++;
    match(book, order, now, fx, run);
    if (!run.over_budget) {
      if (order.open.is_positive())
        link(book, order);
      else
        count_open(order, -1);
    }
  }
  if (!run.over_budget) {
    record(order, fx, /*revised=*/true);
    enter_triggered(book, now, fx, run);
  }
  if (run.over_budget) {
    roll_back(fx);
    return Reject(Reason::TooManyExecutions);
  }
  end_step();
  fx.next_priority = next_priority_;
  executions = run.executions;
  return std::nullopt;
}

}  // namespace market
