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
#include "market/undo_step.hpp"

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

  // Executions one call may cause, the stops it triggers included (no budget: unlimited).
  static constexpr std::size_t kNoBudget = static_cast<std::size_t>(-1);

  struct Placed {
    std::optional<Reject> reject;  // set: refused, and nothing changed
    OrderId id = 0;
    // Its executions, those of the stops it triggered, and those stops: what it spent of its
    // budget.
    std::size_t executions = 0;
  };
  // Places an order (docs/PROTOCOL.md, sections 4.1-4.7): reserves cash (a limit buy) or shares
  // (a sell), opens the order and matches it; then the rest rests (GTC), is canceled (IOC, FOK,
  // market) or waits for its trigger (a stop); then the stops its executions triggered enter.
  // Preconditions: `terms.amount` != 0, `terms.limit` >= 0 (zero: market, with IOC or FOK), a
  // stop > 0 with a limit and GTC. Refuses UnknownAccount, UnknownSymbol, InsufficientFunds,
  // InsufficientShares, FillOrKillUnfilled, and TooManyExecutions when its executions, the
  // stops it triggers and their executions would come to more than `budget` (each counts
  // one); a refusal changes nothing.
  Placed place(const std::string& account, const std::string& symbol, const OrderTerms& terms,
               std::int64_t now, Effects& fx, std::size_t budget = kNoBudget);
  // A GTC limit order.
  Placed place_order(const std::string& account, const std::string& symbol, Decimal amount,
                     Decimal limit, std::int64_t now, Effects& fx) {
    return place(account, symbol, OrderTerms{amount, limit, std::nullopt, {}}, now, fx);
  }

  // Sets the open remainder and the limit of the account's own open order (PROTOCOL 4.8):
  // `shares` > 0, `limit` > 0. Refuses NoSuchOrder, NothingToReplace, StopNotTriggered,
  // InsufficientFunds, InsufficientShares and TooManyExecutions (see place); a refusal changes
  // nothing. `executions` counts what it caused.
  std::optional<Reject> replace(const std::string& account, OrderId id, Decimal shares,
                                Decimal limit, std::int64_t now, Effects& fx,
                                std::size_t& executions, std::size_t budget = kNoBudget);

  // The order if it exists and belongs to `account`; never reveals other accounts' orders.
  const Order* find_own_order(const std::string& account, OrderId id) const;
  bool holds_order(OrderId id) const { return orders_.count(id) != 0; }
  // Cancels the open remainder (or a waiting stop's whole amount) and refunds its reservation.
  // On success fills `status`. Refuses NoSuchOrder (whether it is another account's or does
  // not exist) and NothingToCancel.
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
  // `next_priority`: Effects::next_priority as stored (0 when none was).
  void set_next_ids(OrderId next_order_id, std::int64_t next_execution_id,
                    std::int64_t next_priority = 0);
  // Forgets everything, the id counters too: a reload continues after the stored ids, as a
  // replay of the journal does (ids of failed requests were never shown).
  void clear();

  OrderId next_order_id() const { return next_order_id_; }
  std::int64_t next_priority() const { return next_priority_; }
  // Orders in memory: open ones and closed ones not forgotten yet.
  std::size_t order_count() const { return orders_.size(); }

  // What the admission limits of gates/admission.hpp count.
  std::size_t account_count() const { return accounts_.size(); }
  std::size_t symbol_count() const { return books_.size(); }
  std::size_t open_order_count() const { return open_orders_; }
  // Open orders (resting or waiting) of an existing account (0 for an unknown one).
  std::size_t open_orders_of(const std::string& account) const;
  // What placing this order would do on its book (see OrderBook::look_ahead; `limit` zero: a
  // market order); nothing for an unknown symbol. It does not see the stops it would trigger.
  OrderBook::Lookahead look_ahead(const std::string& symbol, Decimal amount, Decimal limit,
                                  std::size_t stop_after) const;

  // Every account, position, order and queue in a canonical text, one line each: for tests
  // that compare two engines' states (a rollback, a replay, a restart).
  std::string describe() const;

 private:
  struct Run;  // one call's matching: its budget, executions and triggered stops

  // Matching (market/matching.cpp).
  std::optional<Reject> check_order(const Account& acct, const OrderBook& book,
                                    const std::string& symbol, const OrderTerms& terms,
                                    std::size_t budget) const;
  Order& open_order(Account& acct, const std::string& account, const std::string& symbol,
                    const OrderTerms& terms, std::int64_t now, Effects& fx);
  // Matches `order` until it fills, stops crossing, cannot pay (a market buy) or the run's
  // budget is spent (then run.over_budget is set).
  void match(OrderBook& book, Order& order, std::int64_t now, Effects& fx, Run& run);
  // The rest of an order that matched: rests (GTC), or is canceled (IOC, FOK, market).
  void settle(OrderBook& book, Order& order, bool rests, std::int64_t now, Effects& fx);
  // Gives back what the order's open remainder reserved (cash or shares).
  void release(Order& order, Effects& fx);
  // The triggered stops enter one by one, first in first out (PROTOCOL 4.7).
  void enter_triggered(OrderBook& book, std::int64_t now, Effects& fx, Run& run);
  void execute(Order& buy, Order& sell, Decimal shares, Decimal price, std::int64_t now,
               Effects& fx);

  // Records of changed rows.
  void record(const Account& acct, const std::string& id, Effects& fx) const;
  void record_position(const std::string& account, const std::string& symbol, const Position& pos,
                       Effects& fx) const;
  static void record(const Order& order, Effects& fx, bool revised = false);

  // Every change a call may take back goes through these (market/engine_steps.cpp): while a
  // step is open (begin_step) each notes how to undo itself, and roll_back() undoes them all.
  void begin_step(const Effects& fx);
  void roll_back(Effects& fx);
  void end_step();
  void add_cash(Account& acct, Decimal delta);
  void add_shares_held(Account& acct, Position& pos, Decimal delta);
  Position& position_of(Account& acct, const std::string& symbol);
  void touch(Order& order);  // before any change to its fields
  Order& new_order(OrderId id);
  // On and off a queue (book or stops), and into or out of the open-order counts.
  void link(OrderBook& book, Order& order);
  void unlink(OrderBook& book, Order& order);
  void count_open(Order& order, int delta);

  StringMap<Account> accounts_;
  StringMap<OrderBook> books_;
  std::unordered_map<OrderId, Order> orders_;
  OrderId next_order_id_ = 1;
  std::int64_t next_execution_id_ = 1;
  std::int64_t next_priority_ = 1;  // never below next_order_id_
  std::size_t open_orders_ = 0;     // resting on the books or waiting for a trigger
  // The open step's changes, newest last (empty between steps), and the counters and effects'
  // sizes when it began.
  std::vector<undo::Step> undo_;
  bool in_step_ = false;
  struct Counters {
    OrderId next_order_id;
    std::int64_t next_execution_id, next_priority;
    std::size_t symbols, accounts, positions, orders, executions;  // rows in the effects
  } step_start_{};
};

}  // namespace market
