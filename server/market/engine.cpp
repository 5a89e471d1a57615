#include "market/engine.hpp"

#include <algorithm>
#include <stdexcept>

namespace market {
namespace {

// A value the parser refuses reached the engine: a bug above it, never a client's error
// (engine.hpp, preconditions).
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

}  // namespace

std::optional<Reject> Engine::create_account(const std::string& id, Decimal balance, Effects& fx) {
  require(!balance.is_negative(), "a balance must not be negative");
  auto [it, inserted] = accounts_.try_emplace(id);
  if (!inserted) return Reject(Reason::AccountExists);
  it->second.cash = balance;
  it->second.deposited = balance;
  record(it->second, id, fx);
  return std::nullopt;
}

std::optional<Reject> Engine::add_shares(const std::string& symbol, const std::string& account,
                                         Decimal shares, Effects& fx) {
  require(shares.is_positive(), "shares must be positive");
  auto acct = accounts_.find(account);
  if (acct == accounts_.end()) return Reject(Reason::UnknownAccount);
  if (books_.try_emplace(symbol).second) fx.symbols.push_back(symbol);
  Position& pos = acct->second.positions[symbol];
  pos.amount += shares;
  pos.granted += shares;
  record_position(account, symbol, pos, fx);
  return std::nullopt;
}

Engine::Placed Engine::place_order(const std::string& account, const std::string& symbol,
                                   Decimal amount, Decimal limit, std::int64_t now, Effects& fx) {
  require(!amount.is_zero(), "an order's amount must not be zero");
  require(limit.is_positive(), "an order's limit must be positive");
  auto acct_it = accounts_.find(account);
  if (acct_it == accounts_.end()) return {Reject(Reason::UnknownAccount)};
  auto book_it = books_.find(symbol);
  if (book_it == books_.end()) return {Reject(Reason::UnknownSymbol)};
  Account& acct = acct_it->second;

  // Reserve first: the reservation and the opening of the order are one step.
  if (amount.is_positive()) {
    Decimal cost = amount * limit;
    if (acct.cash < cost) return {short_of(Reason::InsufficientFunds, cost, acct.cash)};
    acct.cash -= cost;
    record(acct, account, fx);
  } else {
    auto pos = acct.positions.find(symbol);
    Decimal held = pos == acct.positions.end() ? Decimal() : pos->second.amount;
    if (held < amount.abs()) return {short_of(Reason::InsufficientShares, amount.abs(), held)};
    pos->second.amount -= amount.abs();
    record_position(account, symbol, pos->second, fx);
  }

  OrderId id = next_order_id_++;
  Order& order = orders_[id];
  order.id = id;
  order.owner = &acct;
  order.account = account;
  order.symbol = symbol;
  order.amount = amount;
  order.limit = limit;
  order.open = amount.abs();
  order.created_at = now;

  OrderBook& book = book_it->second;
  while (order.open.is_positive()) {
    Order* resting = book.best_match(order);
    if (!resting) break;
    Decimal shares = min(order.open, resting->open);
    // The resting order sets the price.
    if (order.is_buy())
      execute(order, *resting, shares, resting->limit, now, fx);
    else
      execute(*resting, order, shares, resting->limit, now, fx);
    if (!resting->open.is_positive()) take_off(book, *resting);
    record(*resting, fx);
  }
  if (order.open.is_positive()) rest(book, order);
  record(order, fx);
  return {std::nullopt, id};
}

void Engine::execute(Order& buy, Order& sell, Decimal shares, Decimal price, std::int64_t now,
                     Effects& fx) {
  Account& buyer = *buy.owner;
  Account& seller = *sell.owner;
  seller.cash += shares * price;
  // The buyer reserved at its limit; what it did not need to pay goes back.
  buyer.cash += shares * (buy.limit - price);
  // A buy's position may not exist before its first fill.
  if (!buy.position) buy.position = &buyer.positions[buy.symbol];
  Position& pos = *buy.position;
  pos.amount += shares;
  buy.open -= shares;
  sell.open -= shares;
  buy.fills.push_back({shares, price, now});
  sell.fills.push_back({shares, price, now});

  record(seller, sell.account, fx);
  if (buy.account != sell.account) record(buyer, buy.account, fx);
  record_position(buy.account, buy.symbol, pos, fx);
  fx.executions.push_back({next_execution_id_++, buy.id, sell.id, shares, price, now});
}

const Order* Engine::find_own_order(const std::string& account, OrderId id) const {
  auto it = orders_.find(id);
  if (it == orders_.end() || it->second.account != account) return nullptr;
  return &it->second;
}

std::optional<Reject> Engine::cancel(const std::string& account, OrderId id, std::int64_t now,
                                     Effects& fx, OrderStatus& status) {
  auto it = orders_.find(id);
  if (it == orders_.end() || it->second.account != account) return Reject(Reason::NoSuchOrder);
  Order& order = it->second;
  if (!order.is_open()) return Reject(Reason::NothingToCancel);

  take_off(books_.at(order.symbol), order);
  Account& acct = *order.owner;
  if (order.is_buy()) {
    acct.cash += order.open * order.limit;
    record(acct, account, fx);
  } else {
    Position& pos = acct.positions[order.symbol];
    pos.amount += order.open;
    record_position(account, order.symbol, pos, fx);
  }
  order.canceled_at = now;
  record(order, fx);
  status = status_of(order);
  return std::nullopt;
}

OrderStatus Engine::status_of(const Order& order) {
  OrderStatus s;
  s.id = order.id;
  if (order.canceled_at) {
    s.canceled_shares = order.open;
    s.canceled_at = *order.canceled_at;
  } else {
    s.open = order.open;
  }
  s.fills = order.fills;
  return s;
}

void Engine::rest(OrderBook& book, Order& order) {
  book.add(order);
  ++open_orders_;
  ++order.owner->open_orders;
}

void Engine::take_off(OrderBook& book, Order& order) {
  book.remove(order);
  --open_orders_;
  --order.owner->open_orders;
}

std::size_t Engine::open_orders_of(const std::string& account) const {
  auto it = accounts_.find(account);
  return it == accounts_.end() ? 0 : it->second.open_orders;
}

OrderBook::Lookahead Engine::look_ahead(const std::string& symbol, Decimal amount, Decimal limit,
                                        std::size_t stop_after) const {
  auto it = books_.find(symbol);
  if (it == books_.end() || amount.is_zero()) return {};
  return it->second.look_ahead(amount.is_positive(), limit, amount.abs(), stop_after);
}

const Account* Engine::account(const std::string& id) const {
  auto it = accounts_.find(id);
  return it == accounts_.end() ? nullptr : &it->second;
}

void Engine::record(const Account& acct, const std::string& id, Effects& fx) const {
  fx.accounts.push_back({id, acct.cash, acct.deposited});
}

void Engine::record_position(const std::string& account, const std::string& symbol,
                             const Position& pos, Effects& fx) const {
  fx.positions.push_back({account, symbol, pos.amount, pos.granted});
}

void Engine::record(const Order& order, Effects& fx) {
  fx.orders.push_back({order.id, order.account, order.symbol, order.amount, order.limit, order.open,
                       order.created_at, order.canceled_at});
}

void Engine::load_symbol(const std::string& symbol) { books_.try_emplace(symbol); }

void Engine::load_account(const AccountRow& row) {
  Account& acct = accounts_[row.id];
  acct.cash = row.balance;
  acct.deposited = row.deposited;
}

void Engine::load_position(const PositionRow& row) {
  accounts_.at(row.account).positions[row.symbol] = {row.amount, row.granted};
}

void Engine::load_order(const OrderRow& row) {
  Account& acct = accounts_.at(row.account);
  Order& order = orders_[row.id];
  order.id = row.id;
  order.owner = &acct;
  order.account = row.account;
  order.symbol = row.symbol;
  order.amount = row.amount;
  order.limit = row.limit;
  order.open = row.open;
  order.created_at = row.created_at;
  order.canceled_at = row.canceled_at;
  next_order_id_ = std::max(next_order_id_, row.id + 1);
}

void Engine::load_execution(const ExecutionRow& row) {
  // Only open orders are loaded; the other side of a fill may be a closed one.
  Fill fill{row.shares, row.price, row.time};
  for (OrderId id : {row.buy_order, row.sell_order}) {
    auto it = orders_.find(id);
    if (it != orders_.end()) it->second.fills.push_back(fill);
  }
  next_execution_id_ = std::max(next_execution_id_, row.id + 1);
}

void Engine::set_next_ids(OrderId next_order_id, std::int64_t next_execution_id) {
  next_order_id_ = std::max(next_order_id_, next_order_id);
  next_execution_id_ = std::max(next_execution_id_, next_execution_id);
}

std::vector<OrderId> Engine::closed_orders(const Effects& fx) {
  std::vector<OrderId> ids;
  for (const OrderRow& row : fx.orders)
    if (row.canceled_at || !row.open.is_positive()) ids.push_back(row.id);
  return ids;
}

void Engine::forget(OrderId id) {
  auto it = orders_.find(id);
  if (it != orders_.end() && !it->second.is_open()) orders_.erase(it);
}

void Engine::finish_loading() {
  // Ids grow with arrival, so resting orders in id order restores time priority.
  std::vector<Order*> open;
  for (auto& [id, order] : orders_)
    if (order.is_open()) open.push_back(&order);
  std::sort(open.begin(), open.end(), [](Order* a, Order* b) { return a->id < b->id; });
  for (Order* order : open) rest(books_.at(order->symbol), *order);
}

void Engine::clear() {
  accounts_.clear();
  books_.clear();
  orders_.clear();
  open_orders_ = 0;
  // The ids of requests that failed with their batch were never shown to anyone; starting
  // again from the stored ones keeps the live engine in step with a replay of the journal.
  next_order_id_ = 1;
  next_execution_id_ = 1;
}

}  // namespace market
