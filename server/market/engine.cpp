#include "market/engine.hpp"

#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>

namespace market {
namespace {

// A value the parser refuses reached the engine: a bug above it, never a client's error
// (engine.hpp, preconditions).
void require(bool holds, const char* what) {
  if (!holds)
    throw std::invalid_argument(std::string("market::Engine: precondition failed: ") + what);
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

  unlink(books_.at(order.symbol), order);  // off the book, or off the stops if it waits
  count_open(order, -1);
  release(order, fx);
  order.canceled_at = now;
  record(order, fx);
  status = status_of(order);
  return std::nullopt;
}

void Engine::release(Order& order, Effects& fx) {
  Account& acct = *order.owner;
  if (order.is_buy()) {
    if (order.is_market()) return;  // a market buy reserved nothing
    add_cash(acct, order.open * order.limit);
    record(acct, order.account, fx);
  } else {
    Position& pos = position_of(acct, order.symbol);
    add_shares_held(acct, pos, order.open);
    record_position(order.account, order.symbol, pos, fx);
  }
}

OrderStatus Engine::status_of(const Order& order) {
  OrderStatus s;
  s.id = order.id;
  if (order.canceled_at) {
    s.canceled_shares = order.open;
    s.canceled_at = *order.canceled_at;
  } else {
    s.open = order.open;
    s.stop = order.stop;
  }
  s.fills = order.fills;
  return s;
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

void Engine::record(const Order& order, Effects& fx, bool revised) {
  fx.orders.push_back({order.id, order.account, order.symbol, order.amount, order.limit, order.open,
                       order.created_at, order.canceled_at, order.priority, order.stop, revised});
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
  order.priority = row.priority != 0 ? row.priority : row.id;  // 0: stored before priorities
  order.stop = row.stop;
  next_order_id_ = std::max(next_order_id_, row.id + 1);
  next_priority_ = std::max({next_priority_, next_order_id_, order.priority + 1});
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

void Engine::set_next_ids(OrderId next_order_id, std::int64_t next_execution_id,
                          std::int64_t next_priority) {
  next_order_id_ = std::max(next_order_id_, next_order_id);
  next_execution_id_ = std::max(next_execution_id_, next_execution_id);
  next_priority_ = std::max({next_priority_, next_order_id_, next_priority});
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
  // Resting orders in priority order restores time priority; waiting stops go with the stops.
  std::vector<Order*> open;
  for (auto& [id, order] : orders_)
    if (order.is_open()) open.push_back(&order);
  std::sort(open.begin(), open.end(), [](Order* a, Order* b) {
    return a->priority != b->priority ? a->priority < b->priority : a->id < b->id;
  });
  for (Order* order : open) {
    link(books_.at(order->symbol), *order);
    count_open(*order, 1);
  }
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
  next_priority_ = 1;
  end_step();
}

std::string Engine::describe() const {
  std::ostringstream out;
  const std::map<std::string, const Account*> accounts = [&] {
    std::map<std::string, const Account*> m;
    for (const auto& [id, acct] : accounts_) m.emplace(id, &acct);
    return m;
  }();
  for (const auto& [id, acct] : accounts) {
    out << "account " << id << " cash " << acct->cash.to_string() << " open " << acct->open_orders
        << '\n';
    std::map<std::string, const Position*> positions;
    for (const auto& [sym, pos] : acct->positions) positions.emplace(sym, &pos);
    for (const auto& [sym, pos] : positions)
      out << "  position " << sym << ' ' << pos->amount.to_string() << '\n';
  }
  std::map<OrderId, const Order*> orders;
  for (const auto& [id, order] : orders_) orders.emplace(id, &order);
  for (const auto& [id, o] : orders) {
    out << "order " << id << ' ' << o->account << ' ' << o->symbol << ' ' << o->amount.to_string()
        << " @" << o->limit.to_string() << " open " << o->open.to_string() << " priority "
        << o->priority << (o->stop ? " stop " + o->stop->to_string() : "")
        << (o->canceled_at ? " canceled " + std::to_string(*o->canceled_at) : "") << " fills "
        << o->fills.size() << '\n';
  }
  std::map<std::string, const OrderBook*> books;
  for (const auto& [sym, book] : books_) books.emplace(sym, &book);
  for (const auto& [sym, book] : books) out << "book " << sym << '\n' << book->describe();
  out << "next order " << next_order_id_ << " execution " << next_execution_id_ << " open "
      << open_orders_ << '\n';
  return out.str();
}

}  // namespace market
