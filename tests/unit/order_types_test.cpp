// market::Engine's order types (docs/PROTOCOL.md, sections 4.5-4.8): IOC, FOK, market orders,
// stop-limit orders and their triggers, replace and its priority rules, and the rollback of a
// call whose triggered stops go past its execution budget.
#include <optional>
#include <string>

#include <catch2/catch.hpp>

#include "app/apply.hpp"
#include "gates/admission.hpp"
#include "market/engine.hpp"
#include "protocol/parse.hpp"
#include "support/decimal.hpp"
#include "support/reject.hpp"

using market::Decimal;
using market::Effects;
using market::Engine;
using market::OrderId;
using market::OrderStatus;
using market::OrderTerms;
using market::Reason;
using market::TimeInForce;
using testing_support::dec;

namespace {

constexpr auto GTC = TimeInForce::GoodTillCanceled;
constexpr auto IOC = TimeInForce::ImmediateOrCancel;
constexpr auto FOK = TimeInForce::FillOrKill;

struct Market {
  Engine engine;
  Effects fx;
  std::int64_t now = 1700000000;

  Market() {
    for (const char* id : {"A", "B", "C", "S"})
      REQUIRE_FALSE(engine.create_account(id, dec("100000"), fx));
    REQUIRE_FALSE(engine.add_shares("X", "S", dec("10000"), fx));
    REQUIRE_FALSE(engine.add_shares("X", "C", dec("10000"), fx));
  }
  Engine::Placed place(const std::string& who, const std::string& amount, const std::string& limit,
                       TimeInForce tif = GTC, std::optional<std::string> stop = std::nullopt,
                       std::size_t budget = Engine::kNoBudget) {
    OrderTerms t{dec(amount), limit.empty() ? Decimal() : dec(limit), std::nullopt, tif};
    if (stop) t.stop = dec(*stop);
    return engine.place(who, "X", t, now, fx, budget);
  }
  OrderId ok(const std::string& who, const std::string& amount, const std::string& limit,
             TimeInForce tif = GTC, std::optional<std::string> stop = std::nullopt) {
    Engine::Placed p = place(who, amount, limit, tif, stop);
    REQUIRE_FALSE(p.reject);
    return p.id;
  }
  std::optional<Reason> replace(const std::string& who, OrderId id, const std::string& shares,
                                const std::string& limit, std::size_t budget = Engine::kNoBudget) {
    std::size_t executions = 0;
    auto why = engine.replace(who, id, dec(shares), dec(limit), now, fx, executions, budget);
    return why ? std::optional<Reason>(why->reason) : std::nullopt;
  }
  OrderStatus status(const std::string& who, OrderId id) const {
    const market::Order* o = engine.find_own_order(who, id);
    REQUIRE(o != nullptr);
    return Engine::status_of(*o);
  }
  std::string cash(const std::string& who) const { return engine.account(who)->cash.to_string(); }
  std::string shares(const std::string& who) const {
    const auto& p = engine.account(who)->positions;
    auto it = p.find("X");
    return it == p.end() ? "0" : it->second.amount.to_string();
  }
  // "shares@price" of each fill, oldest first.
  std::string fills(const std::string& who, OrderId id) const {
    std::string out;
    for (const market::Fill& f : status(who, id).fills)
      out += (out.empty() ? "" : " ") + f.shares.to_string() + "@" + f.price.to_string();
    return out;
  }
};

}  // namespace

TEST_CASE("IOC executes what it can and cancels the rest with its reservation", "[order_types]") {
  Market m;
  const OrderId sell1 = m.ok("S", "-100", "10");
  m.ok("S", "-100", "11");
  const OrderId ioc = m.ok("B", "150", "10.5", IOC);
  CHECK(m.fills("B", ioc) == "100@10");
  OrderStatus s = m.status("B", ioc);
  REQUIRE(s.canceled_shares);
  CHECK(s.canceled_shares->to_string() == "50");
  CHECK(s.open.is_zero());
  CHECK(m.cash("B") == "99000");  // paid 1,000; 575 of the 1,575 reserved came back
  CHECK_FALSE(m.engine.find_own_order("S", sell1)->is_open());
  // It never rests: a later sell at 10.5 does not match it.
  const OrderId late = m.ok("C", "-10", "10.5");
  CHECK(m.fills("C", late).empty());
  // An IOC that executes nothing is accepted and canceled whole.
  const OrderId none = m.ok("A", "5", "1", IOC);
  CHECK(m.status("A", none).canceled_shares->to_string() == "5");
  CHECK(m.cash("A") == "100000");
}

TEST_CASE("FOK fills whole at the exact boundary or changes nothing", "[order_types]") {
  Market m;
  m.ok("S", "-100", "10");
  m.ok("S", "-100", "11");
  const std::string before = m.engine.describe();
  const OrderId next = m.engine.next_order_id();
  // 200 are there within 11; 200.000001 are not, nor are 200 within 10.999999.
  CHECK(testing_support::reason_of(m.place("B", "200.000001", "11", FOK).reject) ==
        Reason::FillOrKillUnfilled);
  CHECK(testing_support::reason_of(m.place("B", "200", "10.999999", FOK).reject) ==
        Reason::FillOrKillUnfilled);
  CHECK(m.engine.describe() == before);
  CHECK(m.engine.next_order_id() == next);  // no id was used
  const OrderId fok = m.ok("B", "200", "11", FOK);
  CHECK(m.fills("B", fok) == "100@10 100@11");
  CHECK_FALSE(m.status("B", fok).canceled_shares);
  CHECK(m.cash("B") == "97900");
  // A sell FOK against the bids the same way.
  m.ok("A", "50", "9");
  CHECK(testing_support::reason_of(m.place("C", "-51", "9", FOK).reject) ==
        Reason::FillOrKillUnfilled);
  const OrderId sell = m.ok("C", "-50", "9", FOK);
  CHECK(m.fills("C", sell) == "50@9");
}

TEST_CASE("a market buy stops at the first execution it cannot pay", "[order_types]") {
  Market m;
  REQUIRE_FALSE(m.engine.create_account("P", dec("1500"), m.fx));
  m.ok("S", "-100", "10");
  const OrderId dear = m.ok("S", "-100", "12");
  // FOK: the whole cost, 2,200, is more than 1,500.
  Engine::Placed fok = m.place("P", "200", "", FOK);
  REQUIRE(fok.reject);
  CHECK(fok.reject->reason == Reason::InsufficientFunds);
  CHECK(fok.reject->needed.to_string() == "2200");
  CHECK(fok.reject->held.to_string() == "1500");
  const OrderId ioc = m.ok("P", "200", "", IOC);
  CHECK(m.fills("P", ioc) == "100@10");
  CHECK(m.status("P", ioc).canceled_shares->to_string() == "100");
  CHECK(m.cash("P") == "500");
  CHECK(m.shares("P") == "100");
  CHECK(m.engine.find_own_order("S", dear)->open.to_string() == "100");  // untouched
  // With exactly enough it pays to the last cent.
  REQUIRE_FALSE(m.engine.create_account("Q", dec("1200"), m.fx));
  const OrderId exact = m.ok("Q", "100", "", FOK);
  CHECK(m.fills("Q", exact) == "100@12");
  CHECK(m.cash("Q") == "0");
}

TEST_CASE("a market sell takes the best bids and returns its unsold shares", "[order_types]") {
  Market m;
  m.ok("A", "30", "9");
  m.ok("B", "30", "10");
  const OrderId sell = m.ok("C", "-100", "", IOC);
  CHECK(m.fills("C", sell) == "30@10 30@9");
  CHECK(m.status("C", sell).canceled_shares->to_string() == "40");
  CHECK(m.shares("C") == "9940");
  CHECK(testing_support::reason_of(m.place("C", "-20000", "", IOC).reject) ==
        Reason::InsufficientShares);
  // Nothing to sell to: a FOK is refused, an IOC canceled whole.
  CHECK(testing_support::reason_of(m.place("C", "-1", "", FOK).reject) ==
        Reason::FillOrKillUnfilled);
  const OrderId empty = m.ok("C", "-1", "", IOC);
  CHECK(m.status("C", empty).canceled_shares->to_string() == "1");
}

TEST_CASE("a stop waits reserved, off the book, until an execution reaches it", "[order_types]") {
  Market m;
  m.ok("S", "-100", "10");
  const OrderId ask12 = m.ok("S", "-100", "12");
  const OrderId stop = m.ok("A", "100", "13", GTC, "11");
  CHECK(m.cash("A") == "98700");
  OrderStatus waiting = m.status("A", stop);
  REQUIRE(waiting.stop);
  CHECK(waiting.stop->to_string() == "11");
  CHECK(waiting.open.to_string() == "100");
  CHECK(m.engine.open_orders_of("A") == 1);  // it counts as resting
  // 10 < 11: not triggered; the ask at 12 is not matched by the waiting stop.
  m.ok("B", "100", "10");
  CHECK(m.status("A", stop).stop);
  CHECK(m.engine.find_own_order("S", ask12)->open.to_string() == "100");
  // An execution at 11 triggers it: it enters as a buy at 13 and takes the ask at 12.
  m.ok("C", "-50", "11");
  const OrderId trigger = m.ok("C", "50", "11");
  CHECK(m.fills("C", trigger) == "50@11");
  OrderStatus entered = m.status("A", stop);
  CHECK_FALSE(entered.stop);
  CHECK(m.fills("A", stop) == "100@12");
  CHECK(m.cash("A") == "98800");  // 13 reserved, 12 paid
}

TEST_CASE("stops cascade first in first out, by id within one execution", "[order_types]") {
  Market m;
  // Sell stops below the market: each triggered one sells into the next bid down, whose
  // execution triggers the next stop.
  m.ok("A", "10", "10");
  m.ok("A", "10", "9");
  m.ok("A", "10", "8");
  const OrderId s2 = m.ok("C", "-10", "1", GTC, "9");   // triggers at <= 9
  const OrderId s1 = m.ok("C", "-10", "1", GTC, "10");  // triggers at <= 10
  const OrderId s3 = m.ok("C", "-10", "1", GTC, "10");  // placed after s1, same stop
  // One sell at 10 executes at 10: s1 and s3 trigger (in id order: s1 first, then s3).
  const OrderId first = m.ok("S", "-10", "10");
  CHECK(m.fills("S", first) == "10@10");
  CHECK(m.fills("C", s1) == "10@9");  // s1 entered first and took the bid at 9
  CHECK(m.fills("C", s3) == "10@8");  // then s3 the bid at 8
  // The execution at 9 triggered s2, which queued behind s3 and found no bid above 1.
  CHECK_FALSE(m.status("C", s2).stop);
  CHECK(m.status("C", s2).open.to_string() == "10");
  CHECK(m.fills("C", s2).empty());
}

TEST_CASE("a stop is canceled whole with its reservation back", "[order_types]") {
  Market m;
  const OrderId stop = m.ok("C", "-5", "8", GTC, "9");
  CHECK(m.shares("C") == "9995");
  OrderStatus s;
  REQUIRE_FALSE(m.engine.cancel("C", stop, m.now, m.fx, s));
  CHECK(s.canceled_shares->to_string() == "5");
  CHECK(m.shares("C") == "10000");
  CHECK(m.engine.open_orders_of("C") == 0);
  // Gone: a later execution at 9 triggers nothing.
  m.ok("A", "1", "9");
  m.ok("S", "-1", "9");
  CHECK(m.status("C", stop).canceled_shares);
}

TEST_CASE("replace keeps priority only for the same limit and a smaller remainder",
          "[order_types]") {
  Market m;
  const OrderId a = m.ok("A", "100", "10");
  const OrderId b = m.ok("B", "100", "10");
  SECTION("smaller at the same limit: first still, the difference back") {
    CHECK(m.replace("A", a, "60", "10") == std::nullopt);
    CHECK(m.cash("A") == "99400");
    const OrderId sell = m.ok("S", "-50", "10");
    CHECK(m.fills("S", sell) == "50@10");
    CHECK(m.fills("A", a) == "50@10");
    CHECK(m.fills("B", b).empty());
    CHECK(m.engine.find_own_order("A", a)->amount.to_string() == "60");
  }
  SECTION("the same remainder and limit: nothing changes") {
    const std::string before = m.engine.describe();
    const std::size_t rows = m.fx.orders.size();
    CHECK(m.replace("A", a, "100", "10") == std::nullopt);
    CHECK(m.engine.describe() == before);
    CHECK(m.fx.orders.size() == rows);
  }
  SECTION("larger at the same limit: behind b") {
    CHECK(m.replace("A", a, "120", "10") == std::nullopt);
    CHECK(m.cash("A") == "98800");
    m.ok("S", "-50", "10");
    CHECK(m.fills("B", b) == "50@10");
    CHECK(m.fills("A", a).empty());
  }
  SECTION("another limit: loses its place, and may match at once") {
    m.ok("S", "-30", "10.5");
    CHECK(m.replace("A", a, "100", "10.5") == std::nullopt);
    CHECK(m.fills("A", a) == "30@10.5");
    CHECK(m.status("A", a).open.to_string() == "70");
    CHECK(m.cash("A") == "98950");                         // 100 x 10.5 reserved, 30 of it spent
    CHECK(m.replace("A", a, "70", "10") == std::nullopt);  // back to 10: behind b now
    m.ok("S", "-50", "10");
    CHECK(m.fills("B", b) == "50@10");
    CHECK(m.fills("A", a) == "30@10.5");
    // executed + open is still the amount
    CHECK(m.engine.find_own_order("A", a)->amount.to_string() == "100");
  }
}

TEST_CASE("replace refuses what it may not do and changes nothing", "[order_types]") {
  Market m;
  REQUIRE_FALSE(m.engine.create_account("P", dec("1000"), m.fx));
  const OrderId buy = m.ok("P", "100", "10");
  const OrderId stop = m.ok("C", "-5", "8", GTC, "9");
  const OrderId sell = m.ok("C", "-100", "20");
  const std::string before = m.engine.describe();
  CHECK(m.replace("P", buy, "101", "10") == Reason::InsufficientFunds);
  CHECK(m.replace("C", sell, "10001", "20") == Reason::InsufficientShares);
  CHECK(m.replace("A", buy, "50", "10") == Reason::NoSuchOrder);  // not A's
  CHECK(m.replace("P", 999, "50", "10") == Reason::NoSuchOrder);
  CHECK(m.replace("C", stop, "5", "7") == Reason::StopNotTriggered);
  CHECK(m.engine.describe() == before);
  OrderStatus s;
  REQUIRE_FALSE(m.engine.cancel("P", buy, m.now, m.fx, s));
  CHECK(m.replace("P", buy, "50", "10") == Reason::NothingToReplace);
  const OrderId ioc = m.ok("P", "1", "1", IOC);
  CHECK(m.replace("P", ioc, "1", "1") == Reason::NothingToReplace);
  // A sell's replace moves shares: 9,895 held beside 100 + 5 reserved.
  CHECK(m.replace("C", sell, "9995", "20") == std::nullopt);
  CHECK(m.shares("C") == "0");
}

TEST_CASE("a call its triggered stops take past the budget is undone whole", "[order_types]") {
  Market m;
  m.ok("A", "10", "10");
  m.ok("A", "10", "9");
  m.ok("A", "10", "8");
  m.ok("C", "-10", "1", GTC, "10");
  m.ok("C", "-10", "1", GTC, "9");
  const std::string before = m.engine.describe();
  const OrderId next = m.engine.next_order_id();
  const std::size_t rows =
      m.fx.orders.size() + m.fx.executions.size() + m.fx.accounts.size() + m.fx.positions.size();
  // The sell executes once itself; it triggers two stops, which execute once each: 5 > 4.
  Engine::Placed over = m.place("S", "-10", "10", GTC, std::nullopt, 4);
  REQUIRE(over.reject);
  CHECK(over.reject->reason == Reason::TooManyExecutions);
  CHECK(m.engine.describe() == before);
  CHECK(m.engine.next_order_id() == next);
  CHECK(m.fx.orders.size() + m.fx.executions.size() + m.fx.accounts.size() +
            m.fx.positions.size() ==
        rows);
  // A replace the same way.
  const OrderId ask = m.ok("S", "-10", "11");
  const std::string with_ask = m.engine.describe();
  CHECK(m.replace("S", ask, "10", "10", 4) == Reason::TooManyExecutions);
  CHECK(m.engine.describe() == with_ask);
  // With 5 it all happens.
  Engine::Placed fits = m.place("S", "-10", "10", GTC, std::nullopt, 5);
  REQUIRE_FALSE(fits.reject);
  CHECK(fits.executions == 5);
}

namespace {

// A random book of limit orders and stops, the same for the same seed.
void random_book(unsigned seed, Market& m) {
  unsigned r = seed;
  auto next = [&r](unsigned n) {
    r = r * 1103515245u + 12345u;
    return (r >> 16) % n;
  };
  for (int i = 0; i < 12; ++i) {
    const bool buy = next(2) == 0;
    const std::string price = std::to_string(8 + next(5));
    const std::string amount = (buy ? "" : "-") + std::to_string(1 + next(20));
    std::optional<std::string> stop;
    if (next(3) == 0) stop = std::to_string(8 + next(5));
    m.place(buy ? "A" : "C", amount, price, GTC, stop);
  }
}

}  // namespace

TEST_CASE("rollback restores a book exactly, whatever the call did", "[order_types]") {
  // A call with a budget one short of what it needs is refused and leaves the engine as it
  // was; with the budget it needs (on a twin built the same way) it succeeds.
  for (unsigned seed = 1; seed <= 300; ++seed) {
    INFO("seed " << seed);
    const bool buy = seed % 2 == 0;
    const std::string amount = (buy ? "" : "-") + std::to_string(10 + seed % 60);
    const std::string limit = buy ? "12" : "8";
    Market full, tight;
    random_book(seed, full);
    random_book(seed, tight);
    const std::string before = tight.engine.describe();
    REQUIRE(full.engine.describe() == before);
    Engine::Placed done = full.place(buy ? "B" : "S", amount, limit);
    REQUIRE_FALSE(done.reject);
    if (done.executions == 0) continue;
    Engine::Placed refused =
        tight.place(buy ? "B" : "S", amount, limit, GTC, std::nullopt, done.executions - 1);
    REQUIRE(refused.reject);
    CHECK(tight.engine.describe() == before);
    // And the twin goes on like the other once given enough.
    REQUIRE_FALSE(
        tight.place(buy ? "B" : "S", amount, limit, GTC, std::nullopt, done.executions).reject);
    CHECK(tight.engine.describe() == full.engine.describe());
  }
}

TEST_CASE("loading restores priorities and waiting stops", "[order_types]") {
  Engine e;
  e.load_symbol("X");
  e.load_account({"1", dec("1000"), dec("1000")});
  e.load_position({"1", "X", dec("10"), dec("20")});
  // Order 3 lost its place to order 4 (a replace gave it priority 7); 5 is a waiting stop.
  e.load_order({3, "1", "X", dec("2"), dec("10"), dec("2"), 100, std::nullopt, 7, std::nullopt});
  e.load_order({4, "1", "X", dec("2"), dec("10"), dec("2"), 100, std::nullopt, 4, std::nullopt});
  e.load_order({5, "1", "X", dec("-10"), dec("9"), dec("10"), 100, std::nullopt, 5, dec("8")});
  e.set_next_ids(6, 1);
  e.finish_loading();
  const std::string book = e.describe();
  CHECK(book.find("  bid 10: 4 3\n") != std::string::npos);
  CHECK(book.find("  sell-stop 8: 5\n") != std::string::npos);
  CHECK(e.open_orders_of("1") == 3);
  // A new order rests behind every loaded one, whatever its id.
  Effects fx;
  Engine::Placed p = e.place_order("1", "X", dec("1"), dec("10"), 200, fx);
  REQUIRE_FALSE(p.reject);
  CHECK(p.id == 6);
  CHECK(e.describe().find("  bid 10: 4 3 6\n") != std::string::npos);
  CHECK(fx.orders.back().priority == 8);
}

TEST_CASE("stops that trigger and execute nothing still count toward the budget", "[order_types]") {
  // 50 sell stops at 10 with a limit no bid reaches: an execution at 10 triggers them all,
  // and each enters and rests. The walk for them stops one past the budget.
  Market m;
  for (int i = 0; i < 50; ++i) m.ok("C", "-1", "100", GTC, "10");
  m.ok("A", "1", "10");
  const std::string before = m.engine.describe();
  Engine::Placed over = m.place("S", "-1", "10", GTC, std::nullopt, 50);  // 1 + 50 > 50
  REQUIRE(over.reject);
  CHECK(over.reject->reason == Reason::TooManyExecutions);
  CHECK(m.engine.describe() == before);
  Engine::Placed fits = m.place("S", "-1", "10", GTC, std::nullopt, 51);
  REQUIRE_FALSE(fits.reject);
  CHECK(fits.executions == 51);
  CHECK(m.engine.describe().find("sell-stop") == std::string::npos);  // all entered
}

TEST_CASE("a child refused for the budget leaves the request nothing", "[order_types]") {
  // Before, each refused child started again with the whole budget: 10,000 market buys that
  // each walked 10,001 asks and were undone held the engine for 40 s.
  Engine e;
  Effects fx;
  REQUIRE_FALSE(e.create_account("1", dec("1000"), fx));
  REQUIRE_FALSE(e.create_account("2", dec("0"), fx));
  REQUIRE_FALSE(e.add_shares("X", "2", dec("5"), fx));
  for (int i = 0; i < 5; ++i)
    REQUIRE_FALSE(e.place_order("2", "X", dec("-1"), dec("1"), 1, fx).reject);
  const std::string payload =
      "<transactions id=\"1\"><order sym=\"X\" amount=\"10\" tif=\"IOC\"/>"
      "<order sym=\"X\" amount=\"1\" limit=\"0.5\"/>"
      "<order sym=\"X\" amount=\"1\" tif=\"IOC\"/>"
      "<order sym=\"X\" amount=\"1\" limit=\"1\"/></transactions>";
  app::Limits limits;
  limits.max_executions_per_request = 3;
  app::Admission admission = app::Admission::live(limits, payload.size());
  const protocol::Command cmd = protocol::parse(payload, protocol::ParseLimits{});
  app::Applied applied = app::apply(cmd, e, 2, fx, admission);
  const auto& items = applied.result.items;
  REQUIRE(items.size() == 4);
  auto refused_for_budget = [](const protocol::ResultItem& item) {
    return item.kind == protocol::ResultItem::Kind::Error && item.reject &&
           item.reject->reason == Reason::TooManyExecutions;
  };
  CHECK(refused_for_budget(items[0]));                         // 5 executions > 3: undone
  CHECK(items[1].kind == protocol::ResultItem::Kind::Opened);  // executes nothing: fine
  CHECK(refused_for_budget(items[2]));                         // 1 > 0 left
  CHECK(refused_for_budget(items[3]));                         // the look-ahead: 1 > 0 left
  CHECK(admission.refused() == "0,2,3");
}
