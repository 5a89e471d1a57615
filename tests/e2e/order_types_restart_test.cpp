// Every order type of docs/PROTOCOL.md sections 4.5-4.8 across a restart: a mix of IOC, FOK and
// market orders, waiting, triggered and canceled stops, replaces that keep and lose their place
// and cancels, on five accounts and four symbols. Every order's status, every balance and
// every position is read before the restart (SIGTERM; SIGKILL with the SQL tables current;
// SIGKILL with the projection held back, so the journal is replayed) and again after it, and
// must be the same to the byte. Then further orders whose replies the document decides only if
// the restarted server kept what it must: waiting stops triggered by an execution, in the order
// they were placed; a stop that rested when it triggered matched behind a bid placed before its
// trigger; replaced orders matched in the place their replace gave them.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "support/checks.hpp"
#include "support/order_desk.hpp"
#include "support/server_process.hpp"
#include "support/test_database.hpp"

using namespace testing_support;

namespace {

const std::vector<std::string> kAccounts = {"1", "2", "3", "4", "5"};
const std::vector<std::string> kSymbols = {"X", "Y", "Z", "W"};

// The orders placed, whose they are, and what the document says each one's status holds.
struct Ledger {
  std::vector<std::pair<std::string, std::string>> orders;  // id, account, in placing order
  std::map<std::string, std::string> expected;              // id -> children of <status>

  std::string place(const Desk& d, const std::string& account, const std::string& child) {
    std::string id = d.open(account, child);
    orders.emplace_back(id, account);
    return id;
  }
  // One <transactions> per account querying every order of it: the replies, times and all.
  std::map<std::string, std::string> statuses(const Desk& d) const {
    std::map<std::string, std::string> queries, out;
    for (const auto& [id, account] : orders) queries[account] += "<query id=\"" + id + "\"/>";
    for (const auto& [account, children] : queries) out[account] = d.raw(account, children);
    return out;
  }
  // What statuses() must say of the account, from `expected`, times as T.
  std::string expected_of(const std::string& account) const {
    std::string out;
    for (const auto& [id, owner] : orders)
      if (owner == account) {
        auto it = expected.find(id);
        out +=
            "<status id=\"" + id + "\">" + (it == expected.end() ? "?" : it->second) + "</status>";
      }
    return out;
  }
  void check(const Desk& d) const {
    for (const auto& [account, reply] : statuses(d)) {
      INFO("account " << account);
      CHECK(compact_reply(reply) == expected_of(account));
    }
  }
};

// Every balance and position, as the protocol states them.
std::map<std::string, std::string> holdings(const Desk& d) {
  std::map<std::string, std::string> out;
  for (const auto& a : kAccounts) {
    out["cash " + a] = d.balance(a);
    for (const auto& s : kSymbols) out[s + " " + a] = d.position(a, s);
  }
  return out;
}

std::string create_all() {
  // 1 sells (cash and shares of every symbol); 2 and 4 hold X too; 3 and 5 only cash.
  std::string xml = "<create>";
  for (const auto& a : kAccounts) xml += "<account id=\"" + a + "\" balance=\"100000\"/>";
  for (const auto& s : kSymbols)
    xml += "<symbol sym=\"" + s + "\"><account id=\"1\">10000</account></symbol>";
  xml +=
      "<symbol sym=\"X\"><account id=\"2\">1000</account><account id=\"4\">1000</account>"
      "</symbol></create>";
  return xml;
}

}  // namespace

TEST_CASE("order types: every status, balance and priority survives a restart", "[e2e]") {
  enum class Way { Term, KillProjected, KillHeldBack };
  const Way way = GENERATE(Way::Term, Way::KillProjected, Way::KillHeldBack);
  const char* names[] = {"SIGTERM", "SIGKILL, SQL tables current",
                         "SIGKILL, projection held back (journal replayed)"};
  INFO(names[static_cast<int>(way)]);
  std::vector<std::string> flags = {"--concurrency", "pool", "--reset"};
  if (way == Way::KillProjected) flags.insert(flags.end(), {"--closed-orders-cached", "0"});
  if (way == Way::KillHeldBack) flags.insert(flags.end(), {"--projector-delay-ms", "600000"});
  auto first = std::make_unique<ServerProcess>(flags);
  Desk d(first->port());
  REQUIRE(compact_reply(send_request(first->port(), create_all())).find("<error") ==
          std::string::npos);
  Ledger l;
  auto& e = l.expected;
  const std::string S = "1", A = "2", B = "3", C = "4", D = "5";

  // X: stops (4.7). Three asks; A's buy stop at 11 to trigger now, buy stops at 14 (A's, then
  // C's) and a sell stop at 8 to wait through the restart; a canceled stop; a resting bid.
  const auto x1 = l.place(d, S, limit_order("X", "-100", "10"));
  const auto x2 = l.place(d, S, limit_order("X", "-100", "12"));
  const auto x3 = l.place(d, S, limit_order("X", "-100", "15"));
  const auto x4 = l.place(d, A, order("X", "100", q("limit", "13") + q("stop", "11")));
  const auto x5 = l.place(d, A, order("X", "50", q("limit", "20") + q("stop", "14")));
  const auto x6 = l.place(d, A, order("X", "-30", q("limit", "5") + q("stop", "8")));
  const auto x7 = l.place(d, C, order("X", "30", q("limit", "20") + q("stop", "14")));
  const auto x8 = l.place(d, B, limit_order("X", "100", "10"));  // 100 @10 against x1: 10 < 11
  const auto x9 = l.place(d, C, limit_order("X", "-50", "11"));
  const auto x10 = l.place(d, C, limit_order("X", "50", "11"));  // 50 @11: x4 triggers
  const auto x11 = l.place(d, A, order("X", "10", q("limit", "9") + q("stop", "30")));
  CHECK(d.tx(A, "<cancel id=\"" + x11 + "\"/>") ==
        "<canceled id=\"" + x11 + "\">" + canceled("10") + "</canceled>");
  const auto x12 = l.place(d, D, limit_order("X", "20", "9"));
  e[x1] = executed("100", "10");
  e[x2] = executed("100", "12");
  e[x3] = open_("100");
  e[x4] = executed("100", "12");
  e[x5] = waiting("50", "14");
  e[x6] = waiting("30", "8");
  e[x7] = waiting("30", "14");
  e[x8] = executed("100", "10");
  e[x9] = executed("50", "11");
  e[x10] = executed("50", "11");
  e[x11] = canceled("10");
  e[x12] = open_("20");

  // Y: replace (4.8). Three bids at 10; 1 replaced to less at the same limit (keeps its place),
  // 3 replaced to the same (nothing changes), 2 replaced to more (behind 3). At 9: D's bid
  // replaced to less keeps its place ahead of A's. A replace that crosses and executes at once,
  // and a cancel.
  const auto y1 = l.place(d, A, limit_order("Y", "100", "10"));
  const auto y2 = l.place(d, B, limit_order("Y", "100", "10"));
  const auto y3 = l.place(d, C, limit_order("Y", "100", "10"));
  const auto y4 = l.place(d, D, limit_order("Y", "100", "9"));
  const auto y8 = l.place(d, A, limit_order("Y", "10", "9"));
  CHECK(d.tx(A, replace(y1, "60", "10")) ==
        "<replaced id=\"" + y1 + "\" shares=\"60\" limit=\"10\"/>");
  CHECK(d.tx(C, replace(y3, "100", "10")) ==
        "<replaced id=\"" + y3 + "\" shares=\"100\" limit=\"10\"/>");
  CHECK(d.tx(B, replace(y2, "120", "10")) ==
        "<replaced id=\"" + y2 + "\" shares=\"120\" limit=\"10\"/>");
  CHECK(d.tx(D, replace(y4, "50", "9")) ==
        "<replaced id=\"" + y4 + "\" shares=\"50\" limit=\"9\"/>");
  const auto y5 = l.place(d, S, limit_order("Y", "-50", "12"));
  const auto y6 = l.place(d, C, limit_order("Y", "20", "9"));
  CHECK(d.tx(C, replace(y6, "20", "12")) ==
        "<replaced id=\"" + y6 + "\" shares=\"20\" limit=\"12\"/>");  // 20 @12 against y5
  const auto y7 = l.place(d, B, limit_order("Y", "10", "10"));
  CHECK(d.tx(B, "<cancel id=\"" + y7 + "\"/>") ==
        "<canceled id=\"" + y7 + "\">" + canceled("10") + "</canceled>");
  e[y1] = open_("60");
  e[y2] = open_("120");
  e[y3] = open_("100");
  e[y4] = open_("50");
  e[y8] = open_("10");
  e[y5] = open_("30") + executed("20", "12");
  e[y6] = executed("20", "12");
  e[y7] = canceled("10");

  // Z: IOC, FOK and market orders (4.5, 4.6), a refused FOK of each kind, a canceled GTC.
  const auto z1 = l.place(d, S, limit_order("Z", "-100", "20"));
  const auto z2 = l.place(d, S, limit_order("Z", "-100", "21"));
  const auto z3 = l.place(d, S, limit_order("Z", "-50", "22"));
  const auto z4 = l.place(d, A, order("Z", "150", q("limit", "20.5") + q("tif", "IOC")));
  const auto z5 = l.place(d, B, order("Z", "100", q("limit", "21") + q("tif", "FOK")));
  CHECK(d.tx(C, order("Z", "100", q("limit", "22") + q("tif", "FOK"))) ==
        "<error sym=\"Z\" amount=\"100\" limit=\"22\" tif=\"FOK\">Fill or kill: the book cannot "
        "fill the whole amount at once within the limit; nothing was applied</error>");
  const auto z6 = l.place(d, D, order("Z", "30", q("tif", "IOC")));  // 30 @22
  const auto z7 = l.place(d, B, limit_order("Z", "50", "18"));
  const auto z8 = l.place(d, C, limit_order("Z", "40", "19"));
  const auto z9 = l.place(d, S, order("Z", "-100", q("tif", "IOC")));  // 40 @19, 50 @18
  const auto z10 = l.place(d, A, limit_order("Z", "10", "15"));
  CHECK(d.tx(A, "<cancel id=\"" + z10 + "\"/>") ==
        "<canceled id=\"" + z10 + "\">" + canceled("10") + "</canceled>");
  CHECK(d.tx(D, order("Z", "-10", q("tif", "FOK"))) ==
        "<error sym=\"Z\" amount=\"-10\" tif=\"FOK\">Fill or kill: the book cannot fill the "
        "whole amount at once within the limit; nothing was applied</error>");
  const auto z11 = l.place(d, A, order("Z", "5", q("limit", "1") + q("tif", "IOC")));
  const auto z12 = l.place(d, D, order("Z", "20", q("tif", "FOK")));  // 20 @22
  const auto z13 = l.place(d, B, limit_order("Z", "-20", "25"));
  e[z1] = executed("100", "20");
  e[z2] = executed("100", "21");
  e[z3] = executed("30", "22") + executed("20", "22");
  e[z4] = canceled("50") + executed("100", "20");
  e[z5] = executed("100", "21");
  e[z6] = executed("30", "22");
  e[z7] = executed("50", "18");
  e[z8] = executed("40", "19");
  e[z9] = canceled("10") + executed("40", "19") + executed("50", "18");
  e[z10] = canceled("10");
  e[z11] = canceled("5");
  e[z12] = executed("20", "22");
  e[z13] = open_("20");

  // W: a triggered stop that rests takes the time of its trigger: behind a bid placed after it
  // but before the execution that triggered it.
  const auto w1 = l.place(d, S, limit_order("W", "-10", "10"));
  const auto w2 = l.place(d, A, order("W", "50", q("limit", "9") + q("stop", "10")));
  const auto w3 = l.place(d, B, limit_order("W", "20", "9"));
  const auto w4 = l.place(d, C, limit_order("W", "10", "10"));  // 10 @10: w2 enters, rests
  e[w1] = executed("10", "10");
  e[w2] = open_("50");
  e[w3] = open_("20");
  e[w4] = executed("10", "10");

  l.check(d);
  const auto before = l.statuses(d);
  const auto held_before = holdings(d);
  // A's cash: 1,200 paid for x4, 1,000 reserved by x5, 600 by y1, 90 by y8, 2,000 paid for z4,
  // 450 reserved by w2.
  CHECK(held_before.at("cash 2") == "94660");
  CHECK(held_before.at("X 2") == "1070");  // 1,000 + 100 bought - 30 reserved by x6
  long long last_id = 0;
  for (const auto& [id, account] : l.orders) last_id = std::max(last_id, std::stoll(id));

  // The restart.
  std::unique_ptr<ServerProcess> second;
  switch (way) {
    case Way::Term:
      CHECK(first->stop() == 0);
      first->restart();
      break;
    case Way::KillProjected:
      CHECK(wait_for_projection());
      first->kill();
      first->restart();
      break;
    case Way::KillHeldBack:
      first->kill();
      CHECK(query_value_now("SELECT seq FROM projection_position") == "0");
      second = std::make_unique<ServerProcess>(std::vector<std::string>{"--concurrency", "pool"});
      break;
  }
  ServerProcess& server = second ? *second : *first;
  Desk r(server.port());
  // Which way the state came back: from the SQL tables alone (the projection of every order
  // type's fields) or from the journal (every request applied again).
  const std::string log = server.log();
  std::size_t from_tables = 0;
  for (auto at = log.find("replayed 0 journal entries"); at != std::string::npos;
       at = log.find("replayed 0 journal entries", at + 1))
    ++from_tables;
  if (way == Way::KillProjected) CHECK(from_tables == 2);  // the first start's, and this one's
  if (way == Way::KillHeldBack) {
    CHECK(from_tables == 0);
    CHECK(log.find(" journal entries in ") != std::string::npos);
  }
  const auto after = l.statuses(r);
  for (const auto& [account, reply] : before) {
    INFO("account " << account);
    CHECK(after.at(account) == reply);
  }
  CHECK(holdings(r) == held_before);

  // X after the restart: B's buy 10 @15 executes against x3 at 15 >= 14, which triggers x5 and
  // then x7 (placed in that order), each executing against x3 at 15.
  const auto p1 = l.place(r, B, limit_order("X", "10", "15"));
  CHECK(std::stoll(p1) > last_id);
  e[p1] = executed("10", "15");
  e[x5] = executed("50", "15");
  e[x7] = executed("30", "15");
  e[x3] = open_("10") + executed("10", "15") + executed("50", "15") + executed("30", "15");
  // Bids 40 @6 and 5 @8; S sells 25 @8: 20 @9 against x12 (9 > 8: no trigger), then 5 @8, which
  // triggers x6: it enters as sell 30 @5 and executes 30 @6.
  const auto p2 = l.place(r, D, limit_order("X", "40", "6"));
  const auto p3 = l.place(r, D, limit_order("X", "5", "8"));
  const auto p4 = l.place(r, S, limit_order("X", "-25", "8"));
  e[p2] = open_("10") + executed("30", "6");
  e[p3] = executed("5", "8");
  e[p4] = executed("20", "9") + executed("5", "8");
  e[x12] = executed("20", "9");
  e[x6] = executed("30", "6");

  // Y after the restart: a sell of 70 @10 takes y1's 60 (kept its place) and then 10 of y3,
  // not of y2 (its replace put it behind y3). A sell of 220 @9 then takes the rest of y3, all
  // of y2, and 10 of y4 (kept its place ahead of y8).
  const auto p5 = l.place(r, S, limit_order("Y", "-70", "10"));
  const auto p6 = l.place(r, S, limit_order("Y", "-220", "9"));
  e[p5] = executed("60", "10") + executed("10", "10");
  e[p6] = executed("90", "10") + executed("120", "10") + executed("10", "9");
  e[y1] = executed("60", "10");
  e[y3] = executed("10", "10") + executed("90", "10");
  e[y2] = executed("120", "10");
  e[y4] = open_("40") + executed("10", "9");
  e[y8] = open_("10");

  // Z after the restart: a market buy of 30 finds z13 alone (20 @25) and cancels the rest; the
  // IOCs left nothing resting, so a sell at 20 rests.
  const auto p7 = l.place(r, C, order("Z", "30", q("tif", "IOC")));
  const auto p8 = l.place(r, S, limit_order("Z", "-5", "20"));
  e[p7] = canceled("10") + executed("20", "25");
  e[z13] = executed("20", "25");
  e[p8] = open_("5");

  // W after the restart: a sell of 30 @9 takes w3's 20 first, then 10 of w2.
  const auto p9 = l.place(r, S, limit_order("W", "-30", "9"));
  e[p9] = executed("20", "9") + executed("10", "9");
  e[w3] = executed("20", "9");
  e[w2] = open_("40") + executed("10", "9");

  l.check(r);
  CHECK(wait_for_projection());
  check_conservation();
  CHECK(query_value(kFillsMatchOrders) == "0");
  CHECK(server.stop() == 0);
}
