// market::Engine: reservations, matching, refunds, cancels, ownership, Effects, conservation.
// The engine checks the rules that depend on its state; the value rules (signs of amounts and
// prices) are the parser's and only its preconditions here (protocol_test covers them).
#include "market/engine.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "app/closed_orders.hpp"
#include "support/decimal.hpp"
#include "support/reject.hpp"

using market::Decimal;
using market::Effects;
using market::Engine;
using market::Order;
using market::OrderId;
using market::OrderStatus;
using market::Reason;
using market::Reject;
using testing_support::dec;
using testing_support::reason_of;

namespace {

struct Exchange {
  Engine engine;
  Effects fx;
  std::int64_t now = 1519348326;

  void account(const std::string& id, const std::string& balance) {
    REQUIRE(engine.create_account(id, dec(balance), fx) == std::nullopt);
  }
  void shares(const std::string& sym, const std::string& id, const std::string& amount) {
    REQUIRE(engine.add_shares(sym, id, dec(amount), fx) == std::nullopt);
  }
  OrderId order(const std::string& id, const std::string& sym, const std::string& amount,
                const std::string& limit) {
    Engine::Placed p = engine.place_order(id, sym, dec(amount), dec(limit), now, fx);
    REQUIRE(p.reject == std::nullopt);
    REQUIRE(p.id > 0);
    return p.id;
  }
  // Why an order that must be rejected was.
  Reject rejected(const std::string& id, const std::string& sym, const std::string& amount,
                  const std::string& limit) {
    Engine::Placed p = engine.place_order(id, sym, dec(amount), dec(limit), now, fx);
    REQUIRE(p.reject.has_value());
    CHECK(p.id == 0);
    return *p.reject;
  }
  OrderStatus cancel(const std::string& id, OrderId order) {
    OrderStatus s;
    REQUIRE(engine.cancel(id, order, now, fx, s) == std::nullopt);
    return s;
  }
  Decimal cash(const std::string& id) const {
    const market::Account* a = engine.account(id);
    REQUIRE(a != nullptr);
    return a->cash;
  }
  Decimal position(const std::string& id, const std::string& sym) const {
    const market::Account* a = engine.account(id);
    REQUIRE(a != nullptr);
    auto it = a->positions.find(sym);
    return it == a->positions.end() ? Decimal() : it->second.amount;
  }
  const Order& own(const std::string& id, OrderId order) const {
    const Order* o = engine.find_own_order(id, order);
    REQUIRE(o != nullptr);
    return *o;
  }
  OrderStatus status(const std::string& id, OrderId order) const {
    return Engine::status_of(own(id, order));
  }
};

void check_fill(const market::Fill& f, const std::string& shares, const std::string& price,
                std::int64_t time) {
  CHECK(f.shares == dec(shares));
  CHECK(f.price == dec(price));
  CHECK(f.time == time);
}

}  // namespace

TEST_CASE("the worked example of PROTOCOL.md 4.2", "[engine][example]") {
  Exchange x;
  x.account("1", "200000");  // the buyer
  x.account("2", "0");       // the seller
  x.shares("X", "2", "2000");

  // 1 buy 300 @125, 2 sell 100 @130, 3 buy 200 @127, 4 sell 500 @128, 5 sell 200 @140,
  // 6 buy 400 @125: nothing matches.
  CHECK(x.order("1", "X", "300", "125") == 1);
  CHECK(x.cash("1") == dec("162500"));
  CHECK(x.order("2", "X", "-100", "130") == 2);
  CHECK(x.position("2", "X") == dec("1900"));
  CHECK(x.order("1", "X", "200", "127") == 3);
  CHECK(x.cash("1") == dec("137100"));
  CHECK(x.order("2", "X", "-500", "128") == 4);
  CHECK(x.position("2", "X") == dec("1400"));
  CHECK(x.order("2", "X", "-200", "140") == 5);
  CHECK(x.position("2", "X") == dec("1200"));
  CHECK(x.order("1", "X", "400", "125") == 6);
  CHECK(x.cash("1") == dec("87100"));
  CHECK(x.fx.executions.empty());
  for (OrderId id : {1, 3, 6}) CHECK(x.own("1", id).fills.empty());
  for (OrderId id : {2, 4, 5}) CHECK(x.own("2", id).fills.empty());
  CHECK(x.cash("2").is_zero());
  CHECK(x.position("1", "X").is_zero());

  // 7 sell 400 @124 executes 200 @127 against 3, then 200 @125 against 1.
  x.fx = Effects();
  x.now += 5;
  CHECK(x.order("2", "X", "-400", "124") == 7);
  CHECK(x.position("2", "X") == dec("800"));
  CHECK(x.cash("2") == dec("50400"));  // 200*127 + 200*125
  CHECK(x.cash("1") == dec("87100"));  // paid exactly its limits: no refund
  CHECK(x.position("1", "X") == dec("400"));

  OrderStatus s1 = x.status("1", 1);
  CHECK(s1.open == dec("100"));
  CHECK_FALSE(s1.canceled_shares);
  REQUIRE(s1.fills.size() == 1);
  check_fill(s1.fills[0], "200", "125", x.now);

  OrderStatus s7 = x.status("2", 7);
  CHECK(s7.open.is_zero());
  CHECK_FALSE(s7.canceled_shares);
  REQUIRE(s7.fills.size() == 2);
  check_fill(s7.fills[0], "200", "127", x.now);
  check_fill(s7.fills[1], "200", "125", x.now);

  OrderStatus s3 = x.status("1", 3);
  CHECK(s3.open.is_zero());
  REQUIRE(s3.fills.size() == 1);
  check_fill(s3.fills[0], "200", "127", x.now);
  CHECK(x.status("1", 6).open == dec("400"));
  CHECK(x.status("1", 6).fills.empty());
  CHECK(x.status("2", 2).open == dec("100"));
  CHECK(x.status("2", 4).open == dec("500"));

  REQUIRE(x.fx.executions.size() == 2);
  CHECK(x.fx.executions[0].buy_order == 3);
  CHECK(x.fx.executions[0].sell_order == 7);
  CHECK(x.fx.executions[0].shares == dec("200"));
  CHECK(x.fx.executions[0].price == dec("127"));
  CHECK(x.fx.executions[0].time == x.now);
  CHECK(x.fx.executions[1].buy_order == 1);
  CHECK(x.fx.executions[1].sell_order == 7);
  CHECK(x.fx.executions[1].price == dec("125"));
  CHECK(x.fx.executions[0].id != x.fx.executions[1].id);

  // 8 buy 600 @135 sweeps 500 @128 (order 4) and 100 @130 (order 2), refunding the difference.
  x.fx = Effects();
  CHECK(x.order("1", "X", "600", "135") == 8);
  // 87100 - 600*135 + 500*(135-128) + 100*(135-130)
  CHECK(x.cash("1") == dec("10100"));
  CHECK(x.cash("2") == dec("127400"));  // 50400 + 500*128 + 100*130
  CHECK(x.position("1", "X") == dec("1000"));
  CHECK(x.position("2", "X") == dec("800"));
  OrderStatus s8 = x.status("1", 8);
  CHECK(s8.open.is_zero());
  REQUIRE(s8.fills.size() == 2);
  check_fill(s8.fills[0], "500", "128", x.now);
  check_fill(s8.fills[1], "100", "130", x.now);
  CHECK(x.status("2", 4).open.is_zero());
  CHECK(x.status("2", 2).open.is_zero());
  CHECK(x.status("2", 5).open == dec("200"));

  // Conservation: 10100 + reserved (100*125 + 400*125) + 127400 = 200000 deposited.
  CHECK(x.cash("1") + dec("62500") + x.cash("2") == dec("200000"));
  // Shares: 1000 + 800 held + 200 reserved by order 5 = 2000 granted.
  CHECK(x.position("1", "X") + x.position("2", "X") + dec("200") == dec("2000"));
}

TEST_CASE("a buy may reserve exactly the available cash, not a cent more", "[engine][reserve]") {
  Exchange x;
  x.account("1", "1000");
  x.account("2", "1000");
  x.account("3", "0");
  x.shares("X", "3", "1");

  Reject why = x.rejected("2", "X", "1", "1000.01");
  CHECK(why.reason == Reason::InsufficientFunds);
  CHECK(why.needed == dec("1000.01"));
  CHECK(why.held == dec("1000"));
  CHECK(x.cash("2") == dec("1000"));
  why = x.rejected("2", "X", "100.000001", "10");
  CHECK(why.reason == Reason::InsufficientFunds);
  CHECK(why.needed == dec("1000.00001"));
  CHECK(x.cash("2") == dec("1000"));

  x.order("1", "X", "10", "100");
  CHECK(x.cash("1").is_zero());
  // Now nothing is left, even a tiny buy fails.
  CHECK(x.rejected("1", "X", "0.000001", "0.000001").reason == Reason::InsufficientFunds);
  CHECK(x.cash("1").is_zero());

  x.order("2", "X", "1", "1000");
  CHECK(x.cash("2").is_zero());
}

TEST_CASE("a sell may reserve exactly the held shares, not more", "[engine][reserve]") {
  Exchange x;
  x.account("1", "0");
  x.account("2", "0");
  x.shares("X", "1", "100");
  x.shares("X", "2", "100");
  x.shares("Y", "2", "5");

  Reject why = x.rejected("2", "X", "-100.01", "1");
  CHECK(why.reason == Reason::InsufficientShares);
  CHECK(why.needed == dec("100.01"));
  CHECK(why.held == dec("100"));
  CHECK(x.position("2", "X") == dec("100"));
  x.order("2", "X", "-100", "1");
  CHECK(x.position("2", "X").is_zero());
  CHECK(x.rejected("2", "X", "-0.000001", "1").reason == Reason::InsufficientShares);

  // Shares of another symbol do not count, and neither does a position never held.
  why = x.rejected("1", "Y", "-1", "1");
  CHECK(why.reason == Reason::InsufficientShares);
  CHECK(why.held.is_zero());
  x.order("1", "X", "-99.5", "3");
  CHECK(x.position("1", "X") == dec("0.5"));
}

TEST_CASE("rejected orders change nothing", "[engine][reserve]") {
  Exchange x;
  x.account("1", "50");
  x.shares("X", "1", "5");
  x.fx = Effects();
  OrderId next = x.engine.next_order_id();
  CHECK(x.rejected("1", "X", "1", "50.000001").reason == Reason::InsufficientFunds);
  CHECK(x.rejected("1", "X", "-6", "1").reason == Reason::InsufficientShares);
  CHECK(x.rejected("1", "NOPE", "1", "1").reason == Reason::UnknownSymbol);
  CHECK(x.rejected("9", "X", "1", "1").reason == Reason::UnknownAccount);
  CHECK(x.fx.empty());
  CHECK(x.engine.next_order_id() == next);
  CHECK(x.engine.order_count() == 0);
  CHECK(x.cash("1") == dec("50"));
  CHECK(x.position("1", "X") == dec("5"));
}

TEST_CASE("unknown symbol and unknown account", "[engine][errors]") {
  Exchange x;
  x.account("1", "100");
  CHECK(x.rejected("1", "X", "1", "1").reason == Reason::UnknownSymbol);
  x.shares("X", "1", "1");
  CHECK(x.rejected("2", "X", "1", "1").reason == Reason::UnknownAccount);
  // Account ids are digit strings: "01" is not "1".
  CHECK(x.rejected("01", "X", "1", "1").reason == Reason::UnknownAccount);
  // Symbols are case sensitive.
  CHECK(x.rejected("1", "x", "1", "1").reason == Reason::UnknownSymbol);

  Effects fx;
  CHECK(reason_of(x.engine.add_shares("Y", "2", dec("1"), fx)) == Reason::UnknownAccount);
  CHECK_FALSE(x.engine.has_symbol("Y"));  // a failed add does not create the symbol
  CHECK(fx.empty());
  CHECK(reason_of(x.engine.create_account("1", dec("5"), fx)) == Reason::AccountExists);
  CHECK(x.cash("1") == dec("100"));  // the duplicate did not reset the balance
  CHECK(fx.empty());
  CHECK(x.engine.account("404") == nullptr);
}

// The value rules are checked once, by the parser (protocol_test): the engine states them as
// preconditions, and a caller that breaks one has a bug, which it hears about as an exception
// (app::DurableEngine answers "Internal error") before anything changed.
TEST_CASE("values the parser refuses are preconditions, not engine errors", "[engine][errors]") {
  Exchange x;
  x.account("1", "100");
  x.shares("X", "1", "5");
  x.fx = Effects();
  const OrderId next = x.engine.next_order_id();
  CHECK_THROWS_AS(x.engine.place_order("1", "X", dec("0"), dec("1"), x.now, x.fx),
                  std::invalid_argument);
  CHECK_THROWS_AS(x.engine.place_order("1", "X", dec("1"), dec("0"), x.now, x.fx),
                  std::invalid_argument);
  CHECK_THROWS_AS(x.engine.place_order("1", "X", dec("-1"), dec("-1"), x.now, x.fx),
                  std::invalid_argument);
  CHECK_THROWS_AS(x.engine.add_shares("X", "1", dec("0"), x.fx), std::invalid_argument);
  CHECK_THROWS_AS(x.engine.add_shares("Y", "1", dec("-1"), x.fx), std::invalid_argument);
  CHECK_THROWS_AS(x.engine.create_account("3", dec("-1"), x.fx), std::invalid_argument);
  CHECK(x.fx.empty());
  CHECK(x.engine.next_order_id() == next);
  CHECK_FALSE(x.engine.has_account("3"));
  CHECK_FALSE(x.engine.has_symbol("Y"));
  CHECK(x.cash("1") == dec("100"));
  CHECK(x.position("1", "X") == dec("5"));
  // A zero balance is a value like any other.
  x.account("4", "0");
}

TEST_CASE("create_account and add_shares", "[engine][create]") {
  Exchange x;
  x.fx = Effects();
  x.account("123456", "1000.5");
  REQUIRE(x.fx.accounts.size() == 1);
  CHECK(x.fx.accounts[0].id == "123456");
  CHECK(x.fx.accounts[0].balance == dec("1000.5"));
  CHECK(x.fx.accounts[0].deposited == dec("1000.5"));
  CHECK(x.engine.has_account("123456"));
  x.account("0", "0");

  x.shares("SPY", "123456", "100000");
  x.shares("SPY", "123456", "0.5");  // the symbol may already exist
  x.shares("SPY", "0", "1");
  CHECK(x.position("123456", "SPY") == dec("100000.5"));
  CHECK(x.position("0", "SPY") == dec("1"));
  CHECK(x.engine.has_symbol("SPY"));
  CHECK(x.fx.symbols == std::vector<std::string>{"SPY"});  // created once
  REQUIRE(x.fx.positions.size() == 3);
  CHECK(x.fx.positions[1].account == "123456");
  CHECK(x.fx.positions[1].symbol == "SPY");
  CHECK(x.fx.positions[1].amount == dec("100000.5"));
  CHECK(x.fx.positions[1].granted == dec("100000.5"));
}

TEST_CASE("a buy filled below its limit gets limit minus price back", "[engine][refund]") {
  Exchange x;
  x.account("B", "10000");
  x.account("S", "0");
  x.shares("X", "S", "100");
  x.order("S", "X", "-10", "90");
  x.order("S", "X", "-10", "95.5");

  OrderId buy = x.order("B", "X", "15", "100");
  // Reserved 1500; paid 10*90 + 5*95.5 = 1377.5; 122.5 back.
  CHECK(x.cash("B") == dec("8622.5"));
  CHECK(x.cash("S") == dec("1377.5"));
  CHECK(x.position("B", "X") == dec("15"));
  OrderStatus s = x.status("B", buy);
  CHECK(s.open.is_zero());
  REQUIRE(s.fills.size() == 2);
  check_fill(s.fills[0], "10", "90", x.now);
  check_fill(s.fills[1], "5", "95.5", x.now);

  // A partly filled buy keeps only the remainder reserved at its limit.
  OrderId buy2 = x.order("B", "X", "10", "100");
  // 5 @95.5 = 477.5 paid, 5*100 still reserved: 8622.5 - 1000 + 5*4.5
  CHECK(x.cash("B") == dec("7645"));
  CHECK(x.status("B", buy2).open == dec("5"));
  OrderStatus c = x.cancel("B", buy2);
  CHECK(x.cash("B") == dec("8145"));
  CHECK(c.canceled_shares == dec("5"));
  REQUIRE(c.fills.size() == 1);
  check_fill(c.fills[0], "5", "95.5", x.now);
  // Everything B holds: cash + paid = deposited.
  CHECK(x.cash("B") + x.cash("S") == dec("10000"));
}

TEST_CASE("fractional amounts and prices stay exact", "[engine][refund]") {
  Exchange x;
  x.account("B", "1");
  x.account("S", "0");
  x.shares("X", "S", "0.3");
  x.order("S", "X", "-0.1", "0.1");
  x.order("S", "X", "-0.2", "0.2");
  x.order("B", "X", "0.3", "3");  // reserves 0.9
  CHECK(x.cash("S") == dec("0.05"));
  CHECK(x.cash("B") == dec("0.95"));
  CHECK(x.position("B", "X") == dec("0.3"));
  CHECK(x.position("S", "X").is_zero());
}

TEST_CASE("a partial fill keeps the order's time priority", "[engine][priority]") {
  Exchange x;
  x.account("B", "100000");
  x.account("S1", "0");
  x.account("S2", "0");
  x.account("S3", "0");
  for (const char* s : {"S1", "S2", "S3"}) x.shares("X", s, "100");
  OrderId a = x.order("S1", "X", "-100", "10");
  OrderId b = x.order("S2", "X", "-100", "10");

  x.order("B", "X", "30", "10");
  CHECK(x.status("S1", a).open == dec("70"));
  CHECK(x.status("S2", b).open == dec("100"));

  // A later order at the same price queues behind both.
  OrderId c = x.order("S3", "X", "-100", "10");
  OrderId big = x.order("B", "X", "100", "10");
  CHECK(x.status("S1", a).open.is_zero());
  CHECK(x.status("S2", b).open == dec("70"));
  CHECK(x.status("S3", c).open == dec("100"));
  OrderStatus s = x.status("B", big);
  REQUIRE(s.fills.size() == 2);
  check_fill(s.fills[0], "70", "10", x.now);
  check_fill(s.fills[1], "30", "10", x.now);
  CHECK(x.cash("S1") == dec("1000"));
  CHECK(x.cash("S2") == dec("300"));
  CHECK(x.cash("S3").is_zero());

  // A better price beats time: a later, cheaper sell is taken before S2's older one.
  x.shares("X", "S1", "5");
  OrderId cheap = x.order("S1", "X", "-5", "9.99");
  OrderId next = x.order("B", "X", "10", "10");
  CHECK(x.status("S1", cheap).open.is_zero());
  CHECK(x.status("S2", b).open == dec("65"));
  OrderStatus n = x.status("B", next);
  REQUIRE(n.fills.size() == 2);
  check_fill(n.fills[0], "5", "9.99", x.now);
  check_fill(n.fills[1], "5", "10", x.now);
}

TEST_CASE("cancel refunds the open remainder", "[engine][cancel]") {
  Exchange x;
  x.account("B", "1000");
  x.account("S", "0");
  x.shares("X", "S", "50");

  SECTION("a buy gets remaining x limit back") {
    OrderId buy = x.order("B", "X", "8", "12.5");
    CHECK(x.cash("B") == dec("900"));
    x.now += 60;
    OrderStatus s = x.cancel("B", buy);
    CHECK(x.cash("B") == dec("1000"));
    CHECK(s.id == buy);
    REQUIRE(s.canceled_shares);
    CHECK(*s.canceled_shares == dec("8"));
    CHECK(s.canceled_at == x.now);
    CHECK(s.open.is_zero());
    CHECK(s.fills.empty());
    const Order& o = x.own("B", buy);
    CHECK_FALSE(o.is_open());
    REQUIRE(o.canceled_at);
    CHECK(*o.canceled_at == x.now);
    // A later sell no longer matches it.
    OrderId sell = x.order("S", "X", "-1", "1");
    CHECK(x.status("S", sell).open == dec("1"));
    CHECK(x.position("B", "X").is_zero());
  }

  SECTION("a sell gets its remaining shares back, executed parts stay") {
    OrderId sell = x.order("S", "X", "-20", "10");
    CHECK(x.position("S", "X") == dec("30"));
    x.order("B", "X", "5", "10");
    CHECK(x.cash("S") == dec("50"));
    OrderStatus s = x.cancel("S", sell);
    CHECK(x.position("S", "X") == dec("45"));
    CHECK(x.cash("S") == dec("50"));
    CHECK(x.position("B", "X") == dec("5"));
    REQUIRE(s.canceled_shares);
    CHECK(*s.canceled_shares == dec("15"));
    REQUIRE(s.fills.size() == 1);
    check_fill(s.fills[0], "5", "10", x.now);
    // Query after cancel: canceled, never open.
    OrderStatus q = x.status("S", sell);
    CHECK(q.open.is_zero());
    REQUIRE(q.canceled_shares);
    CHECK(*q.canceled_shares == dec("15"));
    CHECK(q.fills.size() == 1);
    // A later buy does not match the canceled sell.
    OrderId buy = x.order("B", "X", "1", "100");
    CHECK(x.status("B", buy).open == dec("1"));
  }

  SECTION("nothing open: filled or already canceled orders cannot be canceled") {
    OrderId sell = x.order("S", "X", "-5", "10");
    x.order("B", "X", "5", "10");
    OrderStatus s;
    x.fx = Effects();
    CHECK(reason_of(x.engine.cancel("S", sell, x.now, x.fx, s)) == Reason::NothingToCancel);
    OrderId buy = x.order("B", "X", "1", "1");
    x.cancel("B", buy);
    Decimal cash = x.cash("B");
    x.fx = Effects();
    CHECK(reason_of(x.engine.cancel("B", buy, x.now, x.fx, s)) == Reason::NothingToCancel);
    CHECK(x.cash("B") == cash);  // no second refund
    CHECK(x.fx.empty());
  }
}

TEST_CASE("only the owner can query or cancel an order", "[engine][ownership]") {
  Exchange x;
  x.account("1", "100");
  x.account("2", "100");
  x.account("01", "100");
  x.shares("X", "1", "1");
  OrderId buy = x.order("1", "X", "1", "10");

  CHECK(x.engine.find_own_order("1", buy) != nullptr);
  CHECK(x.engine.find_own_order("2", buy) == nullptr);
  CHECK(x.engine.find_own_order("01", buy) == nullptr);
  CHECK(x.engine.find_own_order("1", buy + 1000) == nullptr);
  CHECK(x.engine.find_own_order("1", 0) == nullptr);
  CHECK(x.engine.find_own_order("1", -1) == nullptr);

  OrderStatus s;
  auto foreign = reason_of(x.engine.cancel("2", buy, x.now, x.fx, s));
  auto missing = reason_of(x.engine.cancel("2", buy + 1000, x.now, x.fx, s));
  CHECK(foreign == Reason::NoSuchOrder);
  // The error does not reveal whether the order exists.
  CHECK(foreign == missing);
  CHECK(x.own("1", buy).is_open());
  CHECK(x.cash("1") == dec("90"));
  CHECK(x.cash("2") == dec("100"));
}

TEST_CASE("an account may trade with itself", "[engine][self]") {
  Exchange x;
  x.account("7", "1000");
  x.shares("X", "7", "10");
  OrderId sell = x.order("7", "X", "-10", "50");
  x.fx = Effects();
  OrderId buy = x.order("7", "X", "10", "60");
  // Reserved 600, received 500 as seller, got 100 back as buyer.
  CHECK(x.cash("7") == dec("1000"));
  CHECK(x.position("7", "X") == dec("10"));
  CHECK(x.status("7", sell).open.is_zero());
  CHECK(x.status("7", buy).open.is_zero());
  REQUIRE(x.fx.executions.size() == 1);
  CHECK(x.fx.executions[0].buy_order == buy);
  CHECK(x.fx.executions[0].sell_order == sell);
  CHECK(x.fx.executions[0].price == dec("50"));
  REQUIRE_FALSE(x.fx.accounts.empty());
  CHECK(x.fx.accounts.back().id == "7");
  CHECK(x.fx.accounts.back().balance == dec("1000"));
  REQUIRE_FALSE(x.fx.positions.empty());
  CHECK(x.fx.positions.back().amount == dec("10"));
  CHECK(x.fx.positions.back().granted == dec("10"));
}

namespace {

// The last row per key of an Effects, as a store that merges rows would keep them.
struct LastRows {
  std::map<std::string, market::AccountRow> accounts;
  std::map<std::pair<std::string, std::string>, market::PositionRow> positions;
  std::map<OrderId, market::OrderRow> orders;
  explicit LastRows(const Effects& fx) {
    for (const auto& r : fx.accounts) accounts[r.id] = r;
    for (const auto& r : fx.positions) positions[{r.account, r.symbol}] = r;
    for (const auto& r : fx.orders) orders[r.id] = r;
  }
};

// Every row kept from `fx` equals the engine's current state.
void check_rows_match(const Exchange& x, const Effects& fx) {
  LastRows last(fx);
  for (const auto& [id, row] : last.accounts) {
    INFO("account " << id);
    const market::Account* a = x.engine.account(id);
    REQUIRE(a != nullptr);
    CHECK(row.balance == a->cash);
    CHECK(row.deposited == a->deposited);
  }
  for (const auto& [key, row] : last.positions) {
    INFO("position " << key.first << "/" << key.second);
    const market::Account* a = x.engine.account(key.first);
    REQUIRE(a != nullptr);
    auto it = a->positions.find(key.second);
    REQUIRE(it != a->positions.end());
    CHECK(row.amount == it->second.amount);
    CHECK(row.granted == it->second.granted);
  }
  for (const auto& [id, row] : last.orders) {
    INFO("order " << id);
    const Order* o = x.engine.find_own_order(row.account, id);
    REQUIRE(o != nullptr);
    CHECK(row.symbol == o->symbol);
    CHECK(row.amount == o->amount);
    CHECK(row.limit == o->limit);
    CHECK(row.open == o->open);
    CHECK(row.created_at == o->created_at);
    CHECK(row.canceled_at == o->canceled_at);
  }
}

}  // namespace

TEST_CASE("Effects rows reflect the final values", "[engine][effects]") {
  Exchange x;
  x.account("1", "100000");
  x.account("2", "0");
  x.shares("X", "2", "2000");
  x.order("1", "X", "300", "125");
  x.order("2", "X", "-100", "130");
  x.order("1", "X", "200", "127");
  x.order("2", "X", "-500", "128");
  x.fx = Effects();
  OrderId seven = x.order("2", "X", "-400", "124");

  LastRows last(x.fx);
  CHECK(last.accounts.at("1").balance == x.cash("1"));
  CHECK(last.accounts.at("2").balance == dec("50400"));
  CHECK(last.positions.at({"1", "X"}).amount == dec("400"));
  CHECK(last.positions.at({"2", "X"}).amount == dec("1000"));  // 2000 - 100 - 500 - 400
  CHECK(last.orders.at(seven).open.is_zero());
  CHECK(last.orders.at(3).open.is_zero());
  CHECK(last.orders.at(1).open == dec("100"));
  CHECK(last.orders.count(2) == 0);  // untouched orders are not rewritten
  CHECK(last.orders.count(4) == 0);
  CHECK(x.fx.symbols.empty());
  check_rows_match(x, x.fx);

  x.fx = Effects();
  x.now += 1;
  x.cancel("1", 1);
  REQUIRE(x.fx.orders.size() == 1);
  CHECK(x.fx.orders[0].id == 1);
  CHECK(x.fx.orders[0].open == dec("100"));  // the canceled remainder
  CHECK(x.fx.orders[0].canceled_at == x.now);
  REQUIRE(x.fx.accounts.size() == 1);
  CHECK(x.fx.accounts[0].balance == x.cash("1"));
  CHECK(x.fx.positions.empty());
  CHECK(x.fx.executions.empty());
}

TEST_CASE("conservation holds over a few hundred random orders and cancels",
          "[engine][conservation]") {
  Exchange x;
  std::mt19937 rng(20240229);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };

  const std::vector<std::string> accounts = {"1", "2", "3", "01", "4", "5"};
  const std::vector<std::string> symbols = {"AAA", "B2", "c"};
  std::map<std::string, Decimal> deposited;
  std::map<std::string, Decimal> granted;
  for (const auto& a : accounts) {
    Decimal balance =
        Decimal::from_int(uniform(0, 50000)) + dec("0." + std::to_string(uniform(0, 99)));
    x.account(a, balance.to_string());
    deposited[a] = balance;
    for (const auto& s : symbols) {
      if (uniform(0, 3) == 0) continue;
      Decimal shares = Decimal::from_int(uniform(1, 300));
      x.shares(s, a, shares.to_string());
      granted[s] += shares;
    }
  }
  Effects all = x.fx;

  std::vector<std::pair<std::string, OrderId>> placed;  // owner, id
  int accepted = 0, rejected = 0, canceled = 0, executions = 0;
  auto random_decimal = [&](int lo, int hi, int max_cents) {
    std::string text = std::to_string(uniform(lo, hi));
    int cents = uniform(0, max_cents);
    if (cents) text += "." + std::string(cents < 10 ? "0" : "") + std::to_string(cents);
    return dec(text);
  };

  auto check_invariants = [&]() {
    std::map<std::string, Decimal> held;
    Decimal cash_total, reserved_cash, deposited_total;
    for (const auto& a : accounts) {
      const market::Account* acct = x.engine.account(a);
      REQUIRE(acct != nullptr);
      REQUIRE_FALSE(acct->cash.is_negative());
      cash_total += acct->cash;
      deposited_total += deposited[a];
      for (const auto& [sym, pos] : acct->positions) {
        REQUIRE_FALSE(pos.amount.is_negative());
        held[sym] += pos.amount;
      }
    }
    std::map<std::string, Decimal> best_bid, best_ask;
    for (const auto& [owner, id] : placed) {
      const Order* o = x.engine.find_own_order(owner, id);
      REQUIRE(o != nullptr);
      REQUIRE_FALSE(o->open.is_negative());
      Decimal filled;
      for (const auto& f : o->fills) {
        filled += f.shares;
        if (o->is_buy())
          REQUIRE(f.price <= o->limit);
        else
          REQUIRE(f.price >= o->limit);
      }
      REQUIRE(filled + o->open == o->amount.abs());
      if (!o->is_open()) continue;
      if (o->is_buy()) {
        reserved_cash += o->open * o->limit;
        if (!best_bid.count(o->symbol) || best_bid[o->symbol] < o->limit)
          best_bid[o->symbol] = o->limit;
      } else {
        held[o->symbol] += o->open;
        if (!best_ask.count(o->symbol) || o->limit < best_ask[o->symbol])
          best_ask[o->symbol] = o->limit;
      }
    }
    REQUIRE(cash_total + reserved_cash == deposited_total);
    for (const auto& s : symbols) {
      INFO("symbol " << s);
      REQUIRE(held[s] == granted[s]);
      // The book is never left crossed.
      if (best_bid.count(s) && best_ask.count(s)) REQUIRE(best_bid[s] < best_ask[s]);
    }
  };

  for (int step = 0; step < 400; ++step) {
    x.now += uniform(0, 2);
    x.fx = Effects();
    const std::string& who = accounts[uniform(0, static_cast<int>(accounts.size()) - 1)];
    if (!placed.empty() && uniform(0, 4) == 0) {
      // Cancel a random order, sometimes someone else's.
      const auto& [owner, id] = placed[uniform(0, static_cast<int>(placed.size()) - 1)];
      const std::string& actor = uniform(0, 3) == 0 ? who : owner;
      const Order* o = x.engine.find_own_order(owner, id);
      REQUIRE(o != nullptr);
      bool expect_ok = actor == owner && o->is_open();
      OrderStatus s;
      std::optional<Reject> why = x.engine.cancel(actor, id, x.now, x.fx, s);
      CHECK(why.has_value() != expect_ok);
      if (!why)
        ++canceled;
      else
        CHECK(x.fx.empty());
    } else {
      const std::string& sym = symbols[uniform(0, static_cast<int>(symbols.size()) - 1)];
      Decimal amount = random_decimal(1, 40, uniform(0, 1) ? 99 : 0);
      if (uniform(0, 1)) amount = -amount;
      Decimal limit = random_decimal(95, 105, 99);
      Engine::Placed p = x.engine.place_order(who, sym, amount, limit, x.now, x.fx);
      if (!p.reject) {
        ++accepted;
        placed.emplace_back(who, p.id);
        executions += static_cast<int>(x.fx.executions.size());
      } else {
        ++rejected;
        CHECK(x.fx.empty());
      }
    }
    check_rows_match(x, x.fx);
    all.symbols.insert(all.symbols.end(), x.fx.symbols.begin(), x.fx.symbols.end());
    all.accounts.insert(all.accounts.end(), x.fx.accounts.begin(), x.fx.accounts.end());
    all.positions.insert(all.positions.end(), x.fx.positions.begin(), x.fx.positions.end());
    all.orders.insert(all.orders.end(), x.fx.orders.begin(), x.fx.orders.end());
    all.executions.insert(all.executions.end(), x.fx.executions.begin(), x.fx.executions.end());
    check_invariants();
  }
  // The run exercised what it claims to.
  CHECK(accepted > 100);
  CHECK(rejected > 0);
  CHECK(canceled > 10);
  CHECK(executions > 50);
  check_rows_match(x, all);

  // Ids are unique and increasing.
  std::set<OrderId> ids;
  for (const auto& p : placed) ids.insert(p.second);
  CHECK(ids.size() == placed.size());
  std::set<std::int64_t> exec_ids;
  for (const auto& e : all.executions) exec_ids.insert(e.id);
  CHECK(exec_ids.size() == all.executions.size());

  SECTION("reloading the merged rows restores the same state and priorities") {
    LastRows last(all);
    Engine copy;
    for (const auto& s : symbols) copy.load_symbol(s);
    for (const auto& [id, row] : last.accounts) copy.load_account(row);
    for (const auto& [key, row] : last.positions) copy.load_position(row);
    for (const auto& [id, row] : last.orders) copy.load_order(row);  // map: id order
    for (const auto& row : all.executions) copy.load_execution(row);
    copy.finish_loading();
    CHECK(copy.order_count() == x.engine.order_count());
    CHECK(copy.next_order_id() == x.engine.next_order_id());
    for (const auto& [owner, id] : placed) {
      const Order* a = x.engine.find_own_order(owner, id);
      const Order* b = copy.find_own_order(owner, id);
      REQUIRE(b != nullptr);
      CHECK(a->open == b->open);
      CHECK(a->fills.size() == b->fills.size());
    }
    // The same aggressive orders against both engines produce the same executions.
    for (const auto& s : symbols) {
      for (const auto& a : accounts) {
        Effects fa, fb;
        Decimal amount = dec(uniform(0, 1) ? "7" : "-7");
        Decimal limit = dec(amount.is_positive() ? "106" : "94");
        auto pa = x.engine.place_order(a, s, amount, limit, x.now, fa);
        auto pb = copy.place_order(a, s, amount, limit, x.now, fb);
        CHECK(reason_of(pa.reject) == reason_of(pb.reject));
        CHECK(pa.id == pb.id);
        REQUIRE(fa.executions.size() == fb.executions.size());
        for (std::size_t i = 0; i < fa.executions.size(); ++i) {
          CHECK(fa.executions[i].buy_order == fb.executions[i].buy_order);
          CHECK(fa.executions[i].sell_order == fb.executions[i].sell_order);
          CHECK(fa.executions[i].shares == fb.executions[i].shares);
          CHECK(fa.executions[i].price == fb.executions[i].price);
          CHECK(fa.executions[i].id == fb.executions[i].id);
        }
        // And the same balances and positions: a fill of a loaded buy finds its position.
        REQUIRE(fa.accounts.size() == fb.accounts.size());
        for (std::size_t i = 0; i < fa.accounts.size(); ++i) {
          CHECK(fa.accounts[i].id == fb.accounts[i].id);
          CHECK(fa.accounts[i].balance == fb.accounts[i].balance);
        }
        REQUIRE(fa.positions.size() == fb.positions.size());
        for (std::size_t i = 0; i < fa.positions.size(); ++i) {
          CHECK(fa.positions[i].account == fb.positions[i].account);
          CHECK(fa.positions[i].symbol == fb.positions[i].symbol);
          CHECK(fa.positions[i].amount == fb.positions[i].amount);
        }
      }
    }
  }
}

// A reload (clear, then the stored state) must assign the ids a replay of the journal
// assigns, so clear() forgets the counters too; the stored ids (set_next_ids) still win.
TEST_CASE("clear forgets state and id counters; stored ids still win", "[engine]") {
  Exchange x;
  x.account("1", "10");
  x.shares("X", "1", "1");
  OrderId first = x.order("1", "X", "1", "1");
  x.engine.clear();
  CHECK_FALSE(x.engine.has_account("1"));
  CHECK_FALSE(x.engine.has_symbol("X"));
  CHECK(x.engine.order_count() == 0);
  CHECK(x.engine.next_order_id() == 1);
  x.engine.set_next_ids(first + 1, 1);
  x.account("1", "10");
  x.shares("X", "1", "1");
  CHECK(x.order("1", "X", "1", "1") > first);
}

TEST_CASE("closed orders can be forgotten once durable", "[engine][archive]") {
  Exchange x;
  x.account("B", "1000");
  x.account("S", "0");
  x.shares("X", "S", "100");
  CHECK_FALSE(x.engine.was_assigned(1));
  CHECK_FALSE(x.engine.was_assigned(0));

  x.fx = Effects();
  OrderId sell = x.order("S", "X", "-10", "5");  // 1, rests
  CHECK(Engine::closed_orders(x.fx).empty());
  x.engine.forget(sell);  // an open order is never forgotten
  CHECK(x.engine.holds_order(sell));
  x.fx = Effects();
  OrderId buy = x.order("B", "X", "4", "5");  // 2, filled at once; 1 still open
  CHECK(Engine::closed_orders(x.fx) == std::vector<OrderId>{buy});
  const Effects closed_buy = x.fx;
  x.fx = Effects();
  OrderId rest = x.order("B", "X", "1", "1");  // 3, rests
  x.cancel("B", rest);
  CHECK(Engine::closed_orders(x.fx) == std::vector<OrderId>{rest});
  const Effects closed_rest = x.fx;
  x.fx = Effects();
  OrderId sweep = x.order("B", "X", "6", "5");  // 4, fills the rest of 1
  std::vector<OrderId> closed = Engine::closed_orders(x.fx);
  std::sort(closed.begin(), closed.end());
  CHECK(closed == std::vector<OrderId>{sell, sweep});
  const Effects closed_sell_sweep = x.fx;

  CHECK(x.engine.was_assigned(sweep));
  CHECK_FALSE(x.engine.was_assigned(sweep + 1));

  // The cache above the engine forgets closed orders once the projection holds them.
  app::ClosedOrders cache(0);
  cache.note(closed_buy, 10);
  cache.note(closed_rest, 11);
  cache.note(closed_sell_sweep, 12);
  // Not yet projected: kept.
  cache.forget_projected(x.engine, 9);
  CHECK(x.engine.order_count() == 4);
  // Projected through seq 11, keep none: the first two go.
  cache.forget_projected(x.engine, 11);
  CHECK_FALSE(x.engine.holds_order(buy));
  CHECK_FALSE(x.engine.holds_order(rest));
  CHECK(x.engine.holds_order(sell));
  CHECK(x.engine.find_own_order("B", buy) == nullptr);
  CHECK(x.engine.was_assigned(buy));  // still known to have existed
  // Keep at least 1 of the queued closed orders.
  app::ClosedOrders keep_one(1);
  keep_one.note(closed_sell_sweep, 12);
  keep_one.forget_projected(x.engine, 12);
  CHECK(x.engine.order_count() == 1);
  cache.forget_projected(x.engine, 12);
  CHECK(x.engine.order_count() == 0);

  // Forgotten orders cannot be canceled, and trading goes on with fresh ids.
  OrderStatus s;
  CHECK(x.engine.cancel("B", rest, x.now, x.fx, s).has_value());
  OrderId next = x.order("S", "X", "-1", "5");
  CHECK(next == sweep + 1);
  CHECK(x.cash("B") == dec("950"));  // 1000 - 10*5
  CHECK(x.cash("S") == dec("50"));
  CHECK(x.position("B", "X") == dec("10"));
}

TEST_CASE("loading only open orders: fills of closed counterparts are skipped", "[engine][load]") {
  Engine e;
  e.load_symbol("X");
  e.load_account({"1", dec("100"), dec("200")});
  e.load_account({"2", dec("150"), dec("0")});
  e.load_position({"1", "X", dec("5"), dec("5")});
  e.load_position({"2", "X", dec("5"), dec("10")});
  // Order 7 (a buy of 2, closed, not loaded) took 2 of sell order 9.
  e.load_order({9, "2", "X", dec("-5"), dec("30"), dec("3"), 100, std::nullopt, 9, std::nullopt});
  CHECK_NOTHROW(e.load_execution({4, 7, 9, dec("2"), dec("30"), 101}));
  e.set_next_ids(12, 8);
  e.finish_loading();
  CHECK(e.next_order_id() == 12);
  CHECK(e.was_assigned(11));
  const Order* o = e.find_own_order("2", 9);
  REQUIRE(o != nullptr);
  REQUIRE(o->fills.size() == 1);
  CHECK(o->fills[0].price == dec("30"));
  // The loaded sell rests on the book; the next buy takes it with a fresh id.
  Effects fx;
  Engine::Placed p = e.place_order("1", "X", dec("3"), dec("31"), 200, fx);
  CHECK_FALSE(p.reject.has_value());
  CHECK(p.id == 12);
  REQUIRE(fx.executions.size() == 1);
  CHECK(fx.executions[0].id == 8);
  CHECK(fx.executions[0].sell_order == 9);
  CHECK(fx.executions[0].price == dec("30"));
  // set_next_ids never moves the counters back.
  e.set_next_ids(1, 1);
  CHECK(e.next_order_id() == 13);
}

TEST_CASE("look_ahead counts the executions an order would make, and whether it would rest",
          "[engine][limits]") {
  Exchange x;
  x.account("1", "100000");
  x.account("2", "0");
  x.shares("S", "2", "10");
  x.order("2", "S", "-2", "10");
  x.order("2", "S", "-3", "11");
  x.order("2", "S", "-5", "12");
  CHECK(x.engine.open_order_count() == 3);
  CHECK(x.engine.open_orders_of("2") == 3);
  CHECK(x.engine.open_orders_of("1") == 0);

  auto a = x.engine.look_ahead("S", dec("4"), dec("11"), 100);
  CHECK(a.executions == 2);
  CHECK(a.filled);
  auto b = x.engine.look_ahead("S", dec("6"), dec("11"), 100);  // 5 cross: it would rest
  CHECK(b.executions == 2);
  CHECK_FALSE(b.filled);
  auto c = x.engine.look_ahead("S", dec("10"), dec("12"), 1);  // stops past stop_after
  CHECK(c.executions == 2);
  CHECK_FALSE(c.filled);
  CHECK(x.engine.look_ahead("S", dec("-1"), dec("1"), 100).executions == 0);  // no bids
  CHECK(x.engine.look_ahead("NONE", dec("1"), dec("1"), 100).executions == 0);

  // The buy executes against exactly what look_ahead said, and the counts follow.
  x.order("1", "S", "4", "11");
  CHECK(x.engine.open_order_count() == 2);  // 10 filled, 11 partly
  CHECK(x.engine.open_orders_of("2") == 2);
  x.cancel("2", 2);
  CHECK(x.engine.open_order_count() == 1);
  CHECK(x.engine.open_orders_of("2") == 1);
}
