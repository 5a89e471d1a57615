#pragma once
// A deliberately simple model of the exchange, written from docs/PROTOCOL.md alone (sections 3,
// 4.1-4.8, 5 and the execution budget of 7) for the differential test
// (tests/unit/differential_test.cpp). It shares nothing with server/market but market::Decimal:
// orders live in one plain vector in id order, the best price is a linear scan, and a child that
// goes over the execution budget is undone by restoring a copy of the whole state.
//
// Requests and replies are plain element trees (Element), so the model never touches XML text;
// the test writes a request as XML for the real path and compares the real reply, parsed back,
// with the model's.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "market/decimal.hpp"

namespace reference {

using market::Decimal;
using Attributes = std::vector<std::pair<std::string, std::string>>;

// How the text of an <error> is compared: PROTOCOL.md gives some texts exactly, some only by
// their start, and leaves others open.
enum class TextCheck { Exact, Prefix, Contains, Any };

// One XML element: a request, a child of one, or an item of a reply.
struct Element {
  std::string name;
  Attributes attrs;  // in document order
  std::vector<Element> children;
  std::string text;                    // the text of an <error>, or a share grant's NUM
  TextCheck check = TextCheck::Exact;  // for an <error>: how much of `text` is promised

  const std::string* attr(const std::string& key) const;
};

// Writes an element as XML (no declaration): requests for the real path, and the model's replies
// in failure messages.
std::string to_xml(const Element& e);

enum class Tif { GTC, IOC, FOK };

struct Execution {
  Decimal shares;
  Decimal price;
  std::int64_t time = 0;
};

struct Order {
  std::int64_t id = 0;
  std::string account;
  std::string symbol;
  bool buy = true;
  Decimal amount;                // signed; a replace makes it executed + S (4.8)
  std::optional<Decimal> limit;  // none: a market order (4.6)
  std::optional<Decimal> stop;   // a stop-limit order (4.7)
  Tif tif = Tif::GTC;
  bool waiting = false;  // an untriggered stop (4.7)
  bool on_book = false;  // resting, so it can be matched
  Decimal open;          // what is left of the amount (unsigned)
  Decimal canceled;      // unsigned; > 0 once canceled
  std::int64_t canceled_time = 0;
  std::vector<Execution> executions;
  std::uint64_t seq = 0;  // time priority: smaller is earlier

  Decimal executed() const;
};

struct Account {
  Decimal cash;                              // available (what open buys reserve is out)
  std::map<std::string, Decimal> positions;  // available shares per symbol
  Decimal position(const std::string& symbol) const;
};

class ReferenceMarket {
 public:
  // The limits of section 7 the model keeps: executions per request, and orders resting on all
  // books and for one account (a waiting stop counts as resting).
  struct Limits {
    std::size_t max_executions_per_request = 10000;
    std::size_t max_open_orders = 2000000;
    std::size_t max_open_orders_per_account = 10000;
  };
  explicit ReferenceMarket(Limits limits) : limits_(limits) {}

  // Applies a <create> or <transactions> request made at `now` and returns the items of its
  // <results>, in order.
  std::vector<Element> apply(const Element& request, std::int64_t now);

  const std::map<std::string, Account>& accounts() const { return state_.accounts; }
  const std::vector<Order>& orders() const { return state_.orders; }
  const Order* find(std::int64_t id) const;
  // How often each rule was exercised ("stop cascade", "refused: Fill or kill…"): the test
  // checks that its random sequences reach every one.
  const std::map<std::string, int>& hits() const { return hits_; }

 private:
  // Everything a child may change, so a child over the execution budget can be undone whole.
  struct State {
    std::map<std::string, Account> accounts;
    std::set<std::string> symbols;
    std::vector<Order> orders;  // by id: orders[i].id == i + 1
    std::int64_t next_id = 1;
    std::uint64_t next_seq = 1;
  };

  // <create> children (section 3).
  Element create_account(const Element& child);
  std::vector<Element> grant_shares(const Element& symbol);

  // <transactions> children (section 4).
  Element transaction_child(const std::string& account, const Element& child);
  Element place(const std::string& account, const Element& child);
  Element query(const std::string& account, const Element& child);
  Element cancel(const std::string& account, const Element& child);
  Element replace(const std::string& account, const Element& child);

  // Matching (4.2), IOC/FOK/market ends (4.5, 4.6) and stops (4.7).
  std::optional<std::size_t> best_counter(const Order& incoming) const;
  bool crosses(const Order& incoming, const Order& resting) const;
  void match(std::size_t incoming);
  void execute(std::size_t buy, std::size_t sell, Decimal shares, Decimal price);
  void trigger_stops(const std::string& symbol, Decimal price);
  void enter_triggered_stops();
  void end_incoming(std::size_t incoming);
  void refund_open(Order& order);
  std::vector<const Order*> counters_in_priority(const Order& incoming) const;
  Decimal fillable(const Order& incoming) const;
  Decimal market_buy_cost(const Order& incoming) const;
  std::size_t resting_orders_crossed(const Order& incoming) const;

  // Runs `step` (which applies a child and returns its reply) within the request's execution
  // budget (section 7): over it, the state goes back to what it was and the child gets an error.
  template <typename Step>
  Element within_budget(const Element& child, Step step);

  std::vector<Element> status_children(const Order& order) const;
  std::optional<std::string> open_order_limit(const std::string& account) const;
  Order* own_order(const std::string& account, const std::string& id_text);

  void hit(const std::string& rule) { ++hits_[rule]; }

  State state_;
  std::map<std::string, int> hits_;
  bool entering_stops_ = false;
  Limits limits_;
  std::optional<std::string> rest_refusal_;  // the open-order limit a child would pass
  std::size_t executions_left_ = 0;          // of the request being applied
  std::size_t child_executions_ = 0;         // of the child being applied
  std::size_t child_triggers_ = 0;           // stops the child being applied triggered
  std::deque<std::size_t> triggered_;        // stops waiting to enter, first in first out
  std::int64_t now_ = 0;
};

}  // namespace reference
