#pragma once
// The matching engine: accounts, positions and one order book per symbol, all in memory.
// Pure and single-threaded: callers serialise access (app::DurableEngine holds a lock). Every
// mutating call appends the rows it changed to an Effects, which the store makes durable.
// It knows nothing of sockets, XML or SQL.
//
// Preconditions: the values a caller passes have passed the parser's value rules
// (protocol/parse.cpp): a balance is not negative, shares are positive, an order's amount is not
// zero and its limit is positive. The engine checks only the rules that depend on its state
// (accounts, symbols, cash, positions, orders) and refuses with a market::Reject. Calling it
// with a value the parser refuses is a bug: it throws std::invalid_argument before changing
// anything (app::DurableEngine answers that request "Internal error" and reloads).
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "market/accounts.hpp"
#include "market/effects.hpp"
#include "market/order_book.hpp"
#include "market/reject.hpp"
#include "market/string_map.hpp"
#include "market/types.hpp"

namespace market {

class Engine {
 public:
  // Movable, not copyable: books and orders point at the engine's own orders and accounts,
  // which a move keeps in place (the maps hand over their nodes) and a copy would not.
  Engine() = default;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  Engine(Engine&&) = default;
  Engine& operator=(Engine&&) = default;

  // Each returns nothing on success, otherwise why it refused (and then changed nothing).
  // `balance` >= 0. Refuses AccountExists.
  std::optional<Reject> create_account(const std::string& id, Decimal balance, Effects& fx);
  // Creates the symbol if needed and adds `shares` (> 0) to the account's position. Refuses
  // UnknownAccount.
  std::optional<Reject> add_shares(const std::string& symbol, const std::string& account,
                                   Decimal shares, Effects& fx);

  struct Placed {
    std::optional<Reject> reject;  // set: refused, and nothing changed
    OrderId id = 0;
  };
  // Reserves cash (buy) or shares (sell), opens the order and matches it. `amount` != 0 (> 0
  // buys, < 0 sells), `limit` > 0. Refuses UnknownAccount, UnknownSymbol, InsufficientFunds,
  // InsufficientShares.
  Placed place_order(const std::string& account, const std::string& symbol, Decimal amount,
                     Decimal limit, std::int64_t now, Effects& fx);

  // The order if it exists and belongs to `account`; never reveals other accounts' orders.
  const Order* find_own_order(const std::string& account, OrderId id) const;
  bool holds_order(OrderId id) const { return orders_.count(id) != 0; }
  // Cancels the open remainder and refunds its reservation. On success fills `status`.
  // Refuses NoSuchOrder (whether it is another account's or does not exist) and
  // NothingToCancel.
  std::optional<Reject> cancel(const std::string& account, OrderId id, std::int64_t now,
                               Effects& fx, OrderStatus& status);
  static OrderStatus status_of(const Order& order);

  bool has_account(const std::string& id) const { return accounts_.count(id) != 0; }
  const Account* account(const std::string& id) const;
  bool has_symbol(const std::string& symbol) const { return books_.count(symbol) != 0; }

  // The orders `fx` closed (filled or canceled): they never change again, so a cache above
  // the engine may drop them from memory with forget() once they are stored elsewhere.
  static std::vector<OrderId> closed_orders(const Effects& fx);
  // Drops a closed order from memory (a no-op for an open or unknown one).
  void forget(OrderId id);
  // True if `id` was assigned (it may have been forgotten since).
  bool was_assigned(OrderId id) const { return id > 0 && id < next_order_id_; }

  // Start-up: rebuild state from stored rows: the open orders (in id order, each after its
  // account: load_order throws std::out_of_range for an unknown one) and their executions
  // (in id order); finish_loading() then rests them on their books. Ids continue
  // after the largest stored ones (set_next_ids), whether or not those orders are loaded.
  void load_symbol(const std::string& symbol);
  void load_account(const AccountRow& row);
  void load_position(const PositionRow& row);
  void load_order(const OrderRow& row);
  void load_execution(const ExecutionRow& row);
  void finish_loading();
  void set_next_ids(OrderId next_order_id, std::int64_t next_execution_id);
  // Forgets everything, the id counters too: a reload continues after the stored ids, as a
  // replay of the journal does (ids of failed requests were never shown).
  void clear();

  OrderId next_order_id() const { return next_order_id_; }
  // Orders in memory: open ones and closed ones not forgotten yet.
  std::size_t order_count() const { return orders_.size(); }

  // What the admission limits of gates/admission.hpp count.
  std::size_t account_count() const { return accounts_.size(); }
  std::size_t symbol_count() const { return books_.size(); }
  std::size_t open_order_count() const { return open_orders_; }
  // Open orders of an existing account (0 for an unknown one).
  std::size_t open_orders_of(const std::string& account) const;
  // What placing this order would do on its book (see OrderBook::look_ahead); nothing for an
  // unknown symbol.
  OrderBook::Lookahead look_ahead(const std::string& symbol, Decimal amount, Decimal limit,
                                  std::size_t stop_after) const;

 private:
  void execute(Order& buy, Order& sell, Decimal shares, Decimal price, std::int64_t now,
               Effects& fx);
  void record(const Account& acct, const std::string& id, Effects& fx) const;
  void record_position(const std::string& account, const std::string& symbol, const Position& pos,
                       Effects& fx) const;
  static void record(const Order& order, Effects& fx);
  // Every order goes on and off a book through these two, which keep the open-order counts.
  void rest(OrderBook& book, Order& order);
  void take_off(OrderBook& book, Order& order);

  StringMap<Account> accounts_;
  StringMap<OrderBook> books_;
  std::unordered_map<OrderId, Order> orders_;
  OrderId next_order_id_ = 1;
  std::int64_t next_execution_id_ = 1;
  std::size_t open_orders_ = 0;  // resting on the books
};

}  // namespace market
