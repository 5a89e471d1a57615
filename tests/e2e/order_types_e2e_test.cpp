// The order types of docs/PROTOCOL.md sections 4.5-4.8 (IOC, FOK, market, stop-limit, replace)
// against the real server over real sockets, PostgreSQL behind it, in every concurrency model:
// each section's worked example sent as XML and every reply compared with what the document
// says, element by element and attribute by attribute (times only checked to be whole seconds),
// balances and positions read through the protocol (a refused fill-or-kill order states them);
// then the new refusals, each with its text and nothing applied.
#include <string>

#include <catch2/catch.hpp>

#include "support/checks.hpp"
#include "support/order_desk.hpp"
#include "support/server_process.hpp"
#include "support/test_database.hpp"

using namespace testing_support;

namespace {

// The id attribute of the only item of a compacted reply ("" if there is not exactly one).
std::string id_of(const std::string& compact) {
  ParsedReply r;
  parse_reply("<results>" + compact + "</results>", r);
  return r.items.size() == 1 ? r.items[0].attribute("id").value() : "";
}

const char* const kFokText =
    "Fill or kill: the book cannot fill the whole amount at once within the limit; nothing was "
    "applied";

struct Exchange {
  ServerProcess server;
  Desk desk;
  explicit Exchange(const std::string& model)
      : server({"--concurrency", model, "--threads", "3", "--reset"}), desk(server.port()) {}
};

// The SQL tables catch up with the journal (the order types' rows projected: a market order's
// missing limit, a waiting stop), and then hold what section 6 says they must.
void projected_and_conserved() {
  CHECK(wait_for_projection());
  check_conservation();
}

}  // namespace

TEST_CASE("4.5 time in force: the worked example", "[e2e]") {
  auto model = GENERATE(from_range(models_under_test()));
  INFO("model " << model);
  Exchange ex(model);
  Desk& d = ex.desk;
  // Account 1 sells; account 2 is the document's B, with cash 10,000.
  REQUIRE(d.create(account("1", "0") + account("2", "10000") + shares("X", "1", "1000")) ==
          "<created id=\"1\"/><created id=\"2\"/><created sym=\"X\" id=\"1\"/>");
  const std::string o1 = d.open("1", limit_order("X", "-100", "10"));
  const std::string o2 = d.open("1", limit_order("X", "-100", "11"));

  // IOC 150 @10.5: 100 @10 against order 1, the other 50 canceled; B's balance is 9,000.
  std::string reply = d.tx("2", order("X", "150", q("limit", "10.5") + q("tif", "IOC")));
  const std::string ioc_id = id_of(reply);
  CHECK(reply ==
        "<opened sym=\"X\" amount=\"150\" limit=\"10.5\" tif=\"IOC\" id=\"" + ioc_id + "\"/>");
  CHECK(d.status("2", ioc_id) == status(ioc_id, canceled("50") + executed("100", "10")));
  CHECK(d.balance("2") == "9000");
  CHECK(d.position("2") == "100");
  CHECK(d.status("1", o1) == status(o1, executed("100", "10")));
  CHECK(d.status("1", o2) == status(o2, open_("100")));
  CHECK(d.balance("1") == "1000");
  CHECK(d.position("1") == "800");

  // FOK 150 @11: only order 2's 100 remain within 11. Refused, nothing applied.
  CHECK(d.tx("2", order("X", "150", q("limit", "11") + q("tif", "FOK"))) ==
        "<error sym=\"X\" amount=\"150\" limit=\"11\" tif=\"FOK\">" + std::string(kFokText) +
            "</error>");
  CHECK(d.balance("2") == "9000");
  CHECK(d.status("1", o2) == status(o2, open_("100")));

  // With amount 100 it fills completely at 11, and its status shows only the execution.
  reply = d.tx("2", order("X", "100", q("limit", "11") + q("tif", "FOK")));
  const std::string fok_id = id_of(reply);
  CHECK(reply ==
        "<opened sym=\"X\" amount=\"100\" limit=\"11\" tif=\"FOK\" id=\"" + fok_id + "\"/>");
  CHECK(d.status("2", fok_id) == status(fok_id, executed("100", "11")));
  CHECK(d.status("1", o2) == status(o2, executed("100", "11")));
  CHECK(d.balance("2") == "7900");
  CHECK(d.position("2") == "200");
  CHECK(d.balance("1") == "2100");

  // GTC written out is today's behaviour: it rests, and the IOC before it did not (a sell at
  // the IOC's limit finds no bid).
  const std::string gtc = d.open("2", order("X", "10", q("limit", "1") + q("tif", "GTC")));
  CHECK(d.status("2", gtc) == status(gtc, open_("10")));
  const std::string sell = d.open("1", limit_order("X", "-10", "10.5"));
  CHECK(d.status("1", sell) == status(sell, open_("10")));
  // An IOC that executes nothing is accepted, and its status is only <canceled>.
  const std::string none = d.open("2", order("X", "5", q("limit", "10") + q("tif", "IOC")));
  CHECK(d.status("2", none) == status(none, canceled("5")));
  CHECK(d.balance("2") == "7890");
  projected_and_conserved();
}

TEST_CASE("4.6 market orders: the worked example", "[e2e]") {
  auto model = GENERATE(from_range(models_under_test()));
  INFO("model " << model);
  Exchange ex(model);
  Desk& d = ex.desk;
  REQUIRE(d.create(account("1", "0") + account("2", "1500") + shares("X", "1", "1000")) ==
          "<created id=\"1\"/><created id=\"2\"/><created sym=\"X\" id=\"1\"/>");
  const std::string o1 = d.open("1", limit_order("X", "-100", "10"));
  const std::string o2 = d.open("1", limit_order("X", "-100", "12"));

  // The FOK version first, on the same book: refused with the cost and the balance.
  CHECK(d.tx("2", order("X", "200", q("tif", "FOK"))) ==
        "<error sym=\"X\" amount=\"200\" tif=\"FOK\">Insufficient funds: order needs 2200, "
        "balance is 1500</error>");
  CHECK(d.balance("2") == "1500");
  CHECK(d.status("1", o1) == status(o1, open_("100")));
  CHECK(d.status("1", o2) == status(o2, open_("100")));

  // IOC: 100 @10 (1,000; 500 left), cannot pay 100 @12, stops: 100 canceled, balance 500.
  std::string reply = d.tx("2", order("X", "200", q("tif", "IOC")));
  const std::string o3 = id_of(reply);
  CHECK(reply == "<opened sym=\"X\" amount=\"200\" tif=\"IOC\" id=\"" + o3 + "\"/>");
  CHECK(d.status("2", o3) == status(o3, canceled("100") + executed("100", "10")));
  CHECK(d.balance("2") == "500");
  CHECK(d.position("2") == "100");
  CHECK(d.status("1", o1) == status(o1, executed("100", "10")));
  CHECK(d.status("1", o2) == status(o2, open_("100")));  // never part of one order for lack of cash

  // A market sell: its shares reserved like any sell (not enough: refused), the highest bids
  // first, each at the bid's limit, and the unsold rest back to the position.
  CHECK(d.tx("2", order("X", "-101", q("tif", "IOC"))) ==
        "<error sym=\"X\" amount=\"-101\" tif=\"IOC\">Insufficient shares: order sells 101, "
        "position is 100</error>");
  const std::string b8 = d.open("1", limit_order("X", "30", "8"));
  const std::string b9 = d.open("1", limit_order("X", "40", "9"));
  const std::string ms = d.open("2", order("X", "-100", q("tif", "IOC")));
  CHECK(d.status("2", ms) ==
        status(ms, canceled("30") + executed("40", "9") + executed("30", "8")));
  CHECK(d.status("1", b9) == status(b9, executed("40", "9")));
  CHECK(d.status("1", b8) == status(b8, executed("30", "8")));
  CHECK(d.position("2") == "30");
  CHECK(d.balance("2") == "1100");

  // Against an empty opposite side: an IOC is accepted and canceled whole, a FOK refused.
  const std::string empty_ioc = d.open("2", order("X", "-5", q("tif", "IOC")));
  CHECK(d.status("2", empty_ioc) == status(empty_ioc, canceled("5")));
  CHECK(d.tx("2", order("X", "-5", q("tif", "FOK"))) ==
        "<error sym=\"X\" amount=\"-5\" tif=\"FOK\">" + std::string(kFokText) + "</error>");
  CHECK(d.position("2") == "30");
  // A market buy with an empty balance executes nothing (account 3 has none).
  REQUIRE(d.create(account("3", "0")) == "<created id=\"3\"/>");
  const std::string broke = d.open("3", order("X", "1", q("tif", "IOC")));
  CHECK(d.status("3", broke) == status(broke, canceled("1")));
  CHECK(d.status("1", o2) == status(o2, open_("100")));
  projected_and_conserved();
}

TEST_CASE("4.7 stop-limit orders: the worked example", "[e2e]") {
  auto model = GENERATE(from_range(models_under_test()));
  INFO("model " << model);
  Exchange ex(model);
  Desk& d = ex.desk;
  // 1 is the seller of orders 1 and 2; 2 is A, 3 is B, 4 is C.
  REQUIRE(d.create(account("1", "0") + account("2", "10000") + account("3", "10000") +
                   account("4", "10000") + shares("X", "1", "1000") + shares("X", "4", "50")) ==
          "<created id=\"1\"/><created id=\"2\"/><created id=\"3\"/><created id=\"4\"/>"
          "<created sym=\"X\" id=\"1\"/><created sym=\"X\" id=\"4\"/>");
  const std::string o1 = d.open("1", limit_order("X", "-100", "10"));
  const std::string o2 = d.open("1", limit_order("X", "-100", "12"));

  // A places 3: buy 100 @13 stop 11, reserved like the limit order it will become.
  std::string reply = d.tx("2", order("X", "100", q("limit", "13") + q("stop", "11")));
  const std::string o3 = id_of(reply);
  CHECK(reply == "<opened sym=\"X\" amount=\"100\" limit=\"13\" stop=\"11\" id=\"" + o3 + "\"/>");
  const std::string waiting = status(o3, "<waiting shares=\"100\" stop=\"11\"/>");
  CHECK(d.status("2", o3) == waiting);
  CHECK(d.balance("2") == "8700");

  // B places 4: buy 100 @10, which executes 100 @10 against order 1: 10 < 11, 3 still waits.
  const std::string o4 = d.open("3", limit_order("X", "100", "10"));
  CHECK(d.status("3", o4) == status(o4, executed("100", "10")));
  CHECK(d.status("1", o1) == status(o1, executed("100", "10")));
  CHECK(d.status("2", o3) == waiting);
  CHECK(d.balance("2") == "8700");
  CHECK(d.status("1", o2) == status(o2, open_("100")));  // a waiting stop is not on the book

  // C places 5: sell 50 @11 (rests), then 6: buy 50 @11, which executes 50 @11 against 5;
  // 11 >= 11 triggers order 3, which enters as buy 100 @13 and executes 100 @12 against 2.
  const std::string o5 = d.open("4", limit_order("X", "-50", "11"));
  CHECK(d.status("4", o5) == status(o5, open_("50")));
  reply = d.tx("4", limit_order("X", "50", "11"));
  const std::string o6 = id_of(reply);
  CHECK(reply == "<opened sym=\"X\" amount=\"50\" limit=\"11\" id=\"" + o6 + "\"/>");
  CHECK(d.status("4", o6) == status(o6, executed("50", "11")));
  CHECK(d.status("4", o5) == status(o5, executed("50", "11")));
  CHECK(d.status("2", o3) == status(o3, executed("100", "12")));
  CHECK(d.status("1", o2) == status(o2, executed("100", "12")));
  // A reserved 1,300 and paid 1,200: 100 back.
  CHECK(d.balance("2") == "8800");
  CHECK(d.position("2") == "100");
  CHECK(d.balance("1") == "2200");
  // Every execution has the time of the request that caused it: order 6's.
  auto time_of = [&](const std::string& who, const std::string& id) {
    ParsedReply r;
    parse_reply(d.raw(who, "<query id=\"" + id + "\"/>"), r);
    return std::string(r.items.at(0).child("executed").attribute("time").value());
  };
  CHECK(time_of("2", o3) == time_of("4", o6));
  projected_and_conserved();
}

TEST_CASE("4.7 stop-limit orders: cancel, trigger order and the sell side", "[e2e]") {
  auto model = GENERATE(from_range(models_under_test()));
  INFO("model " << model);
  Exchange ex(model);
  Desk& d = ex.desk;
  REQUIRE(d.create(account("1", "100000") + account("2", "10000") + account("3", "10000") +
                   shares("X", "1", "1000") + shares("X", "2", "100")) ==
          "<created id=\"1\"/><created id=\"2\"/><created id=\"3\"/>"
          "<created sym=\"X\" id=\"1\"/><created sym=\"X\" id=\"2\"/>");

  // A waiting stop's cancel: its whole amount, and its reservation back.
  const std::string stop = d.open("3", order("X", "100", q("limit", "13") + q("stop", "11")));
  CHECK(d.balance("3") == "8700");
  CHECK(d.tx("3", "<cancel id=\"" + stop + "\"/>") ==
        "<canceled id=\"" + stop + "\">" + canceled("100") + "</canceled>");
  CHECK(d.balance("3") == "10000");
  CHECK(d.status("3", stop) == status(stop, canceled("100")));
  CHECK(d.tx("3", "<cancel id=\"" + stop + "\"/>") ==
        "<error id=\"" + stop + "\">Order has nothing open to cancel</error>");

  // A sell stop waits with its shares reserved; two buy stops triggered by one execution enter
  // in the order they were placed, after the order that triggered them.
  const std::string sell_stop = d.open("2", order("X", "-100", q("limit", "5") + q("stop", "8")));
  CHECK(d.status("2", sell_stop) == status(sell_stop, "<waiting shares=\"100\" stop=\"8\"/>"));
  CHECK(d.position("2") == "0");
  const std::string first = d.open("3", order("X", "30", q("limit", "20") + q("stop", "14")));
  const std::string second = d.open("2", order("X", "20", q("limit", "20") + q("stop", "14")));
  const std::string ask = d.open("1", limit_order("X", "-100", "15"));
  const std::string trigger = d.open("1", limit_order("X", "10", "15"));  // 10 @15 against ask
  CHECK(d.status("1", trigger) == status(trigger, executed("10", "15")));
  CHECK(d.status("3", first) == status(first, executed("30", "15")));
  CHECK(d.status("2", second) == status(second, executed("20", "15")));
  CHECK(d.status("1", ask) == status(ask, open_("40") + executed("10", "15") +
                                              executed("30", "15") + executed("20", "15")));
  CHECK(d.status("2", sell_stop) == status(sell_stop, "<waiting shares=\"100\" stop=\"8\"/>"));

  // The sell stop triggers at an execution <= 8 and enters as sell 100 @5: bids of 6 first.
  const std::string bid6 = d.open("1", limit_order("X", "60", "6"));
  const std::string bid8 = d.open("1", limit_order("X", "5", "8"));
  const std::string hit = d.open("1", limit_order("X", "-5", "8"));  // 5 @8 against bid8
  CHECK(d.status("1", hit) == status(hit, executed("5", "8")));
  CHECK(d.status("1", bid8) == status(bid8, executed("5", "8")));
  CHECK(d.status("2", sell_stop) == status(sell_stop, open_("40") + executed("60", "6")));
  CHECK(d.status("1", bid6) == status(bid6, executed("60", "6")));
  CHECK(d.position("2") == "20");  // 100 reserved, 60 sold, 40 still reserved; 20 bought at 15
  projected_and_conserved();
}

TEST_CASE("4.8 replace: the worked example", "[e2e]") {
  auto model = GENERATE(from_range(models_under_test()));
  INFO("model " << model);
  Exchange ex(model);
  Desk& d = ex.desk;
  REQUIRE(d.create(account("1", "0") + account("2", "10000") + account("3", "10000") +
                   shares("X", "1", "1000") + shares("Y", "1", "1000")) ==
          "<created id=\"1\"/><created id=\"2\"/><created id=\"3\"/>"
          "<created sym=\"X\" id=\"1\"/><created sym=\"Y\" id=\"1\"/>");
  // A (2) places 1: buy 100 @10, then B (3) places 2: buy 100 @10.
  const std::string o1 = d.open("2", limit_order("X", "100", "10"));
  const std::string o2 = d.open("3", limit_order("X", "100", "10"));
  CHECK(d.balance("2") == "9000");

  // 60 @10: order 1 keeps its place, 400 back to A.
  CHECK(d.tx("2", replace(o1, "60", "10")) ==
        "<replaced id=\"" + o1 + "\" shares=\"60\" limit=\"10\"/>");
  CHECK(d.status("2", o1) == status(o1, open_("60")));
  CHECK(d.balance("2") == "9400");
  // The same limit and the same remainder changes nothing and still replies <replaced>.
  CHECK(d.tx("2", replace(o1, "60", "10")) ==
        "<replaced id=\"" + o1 + "\" shares=\"60\" limit=\"10\"/>");
  CHECK(d.balance("2") == "9400");
  // 60 @10.5 takes 30 more (60 x 10.5 - 60 x 10): order 1 is the best bid alone.
  CHECK(d.tx("2", replace(o1, "60", "10.5")) ==
        "<replaced id=\"" + o1 + "\" shares=\"60\" limit=\"10.5\"/>");
  CHECK(d.balance("2") == "9370");
  CHECK(d.status("2", o1) == status(o1, open_("60")));
  // Back to 100 @10 puts it behind order 2; a sell 50 @10 then executes against order 2.
  CHECK(d.tx("2", replace(o1, "100", "10")) ==
        "<replaced id=\"" + o1 + "\" shares=\"100\" limit=\"10\"/>");
  CHECK(d.balance("2") == "9000");
  const std::string sell = d.open("1", limit_order("X", "-50", "10"));
  CHECK(d.status("1", sell) == status(sell, executed("50", "10")));
  CHECK(d.status("3", o2) == status(o2, open_("50") + executed("50", "10")));
  CHECK(d.status("2", o1) == status(o1, open_("100")));

  // The priority kept: on Y, the same two bids, 1 replaced to 60 @10, and a sell 50 @10 goes
  // to order 1 first.
  const std::string y1 = d.open("2", limit_order("Y", "100", "10"));
  const std::string y2 = d.open("3", limit_order("Y", "100", "10"));
  CHECK(d.tx("2", replace(y1, "60", "10")) ==
        "<replaced id=\"" + y1 + "\" shares=\"60\" limit=\"10\"/>");
  const std::string ysell = d.open("1", limit_order("Y", "-50", "10"));
  CHECK(d.status("1", ysell) == status(ysell, executed("50", "10")));
  CHECK(d.status("2", y1) == status(y1, open_("10") + executed("50", "10")));
  CHECK(d.status("3", y2) == status(y2, open_("100")));

  // A replace that loses priority may match at once, at the resting order's price; a larger
  // remainder after executions: amount = executed + S.
  const std::string ask = d.open("1", limit_order("Y", "-30", "11"));
  CHECK(d.tx("2", replace(y1, "40", "11.5")) ==
        "<replaced id=\"" + y1 + "\" shares=\"40\" limit=\"11.5\"/>");
  CHECK(d.status("2", y1) == status(y1, open_("10") + executed("50", "10") + executed("30", "11")));
  CHECK(d.status("1", ask) == status(ask, executed("30", "11")));
  // A's cash: 10,000 - 1,000 (X, order 1) - 500 (Y, 50 @10) - 330 (30 @11) - 115 (10 @11.5).
  CHECK(d.balance("2") == "8055");
  // A sell replace: the reservation becomes S shares.
  const std::string ysell2 = d.open("1", limit_order("Y", "-100", "20"));
  CHECK(d.position("1", "Y") == "820");
  CHECK(d.tx("1", replace(ysell2, "921", "20")) ==
        "<error id=\"" + ysell2 +
            "\" shares=\"921\" limit=\"20\">Insufficient shares: order "
            "sells 821, position is 820</error>");
  CHECK(d.status("1", ysell2) == status(ysell2, open_("100")));
  CHECK(d.tx("1", replace(ysell2, "920", "20")) ==
        "<replaced id=\"" + ysell2 + "\" shares=\"920\" limit=\"20\"/>");
  CHECK(d.position("1", "Y") == "0");
  CHECK(d.status("1", ysell2) == status(ysell2, open_("920")));
  projected_and_conserved();
}

TEST_CASE("order types: the new refusals, each with nothing applied", "[e2e]") {
  auto model = GENERATE(from_range(models_under_test()));
  INFO("model " << model);
  Exchange ex(model);
  Desk& d = ex.desk;
  REQUIRE(d.create(account("1", "1000") + account("2", "1000") + shares("X", "1", "100")) ==
          "<created id=\"1\"/><created id=\"2\"/><created sym=\"X\" id=\"1\"/>");
  const std::string mine = d.open("1", limit_order("X", "10", "5"));   // reserves 50
  const std::string theirs = d.open("2", limit_order("X", "1", "5"));  // reserves 5
  const std::string stop = d.open("1", order("X", "-10", q("limit", "9") + q("stop", "4")));
  const std::string ioc = d.open("1", order("X", "1", q("limit", "1") + q("tif", "IOC")));
  REQUIRE(d.balance("1") == "950");
  REQUIRE(d.position("1") == "90");

  // tif: exactly GTC, IOC or FOK, case matters.
  for (const char* tif : {"gtc", "ioc", "Fok", "", "DAY", "IOC "})
    CHECK(d.tx("1", order("X", "1", q("limit", "1") + q("tif", tif))) ==
          "<error sym=\"X\" amount=\"1\" limit=\"1\" tif=\"" + std::string(tif) +
              "\">Invalid tif: must be GTC, IOC or FOK</error>");
  // A market order needs IOC or FOK.
  CHECK(d.tx("1", order("X", "1", "")) ==
        "<error sym=\"X\" amount=\"1\">Invalid order: a market order (no limit) needs tif IOC or "
        "FOK</error>");
  CHECK(d.tx("1", order("X", "-1", q("tif", "GTC"))) ==
        "<error sym=\"X\" amount=\"-1\" tif=\"GTC\">Invalid order: a market order (no limit) "
        "needs tif IOC or FOK</error>");
  // A stop needs a limit and GTC, and a positive stop.
  CHECK(d.tx("1", order("X", "1", q("limit", "5") + q("stop", "4") + q("tif", "IOC"))) ==
        "<error sym=\"X\" amount=\"1\" limit=\"5\" stop=\"4\" tif=\"IOC\">Invalid order: a stop "
        "order's tif must be GTC</error>");
  CHECK(d.tx("1", order("X", "1", q("tif", "FOK") + q("limit", "5") + q("stop", "4"))) ==
        "<error sym=\"X\" amount=\"1\" tif=\"FOK\" limit=\"5\" stop=\"4\">Invalid order: a stop "
        "order's tif must be GTC</error>");
  CHECK(d.tx("1", order("X", "1", q("stop", "4"))) ==
        "<error sym=\"X\" amount=\"1\" stop=\"4\">Missing attribute 'limit'</error>");
  CHECK(d.tx("1", order("X", "1", q("limit", "5") + q("stop", "0"))) ==
        "<error sym=\"X\" amount=\"1\" limit=\"5\" stop=\"0\">Invalid stop: must be "
        "positive</error>");
  CHECK(d.tx("1", order("X", "1", q("limit", "5") + q("stop", "abc"))) ==
        "<error sym=\"X\" amount=\"1\" limit=\"5\" stop=\"abc\">Invalid stop: not a decimal "
        "number: 'abc'</error>");
  // A stop written with tif="GTC" is accepted and echoes both.
  const std::string gtc_stop =
      d.open("1", order("X", "1", q("limit", "2") + q("stop", "3") + q("tif", "GTC")));
  CHECK(d.status("1", gtc_stop) == status(gtc_stop, "<waiting shares=\"1\" stop=\"3\"/>"));
  CHECK(d.tx("1", "<cancel id=\"" + gtc_stop + "\"/>") ==
        "<canceled id=\"" + gtc_stop + "\">" + canceled("1") + "</canceled>");

  // Replace: another account's order and an unknown id read the same.
  const std::string unknown = std::to_string(std::stoll(ioc) + 1000);
  const std::string other = d.tx("1", replace(theirs, "1", "5"));
  CHECK(other == "<error id=\"" + theirs +
                     "\" shares=\"1\" limit=\"5\">No such order for this account</error>");
  CHECK(d.tx("1", replace(unknown, "1", "5")) ==
        "<error id=\"" + unknown +
            "\" shares=\"1\" limit=\"5\">No such order for this account</error>");
  CHECK(d.status("2", theirs) == status(theirs, open_("1")));
  CHECK(d.balance("2") == "995");
  // A waiting stop, an IOC, a canceled order: refused with their own texts.
  CHECK(d.tx("1", replace(stop, "5", "9")) ==
        "<error id=\"" + stop +
            "\" shares=\"5\" limit=\"9\">Order is a stop that has not triggered: cancel it and "
            "place a new one</error>");
  CHECK(d.tx("1", replace(ioc, "1", "1")) ==
        "<error id=\"" + ioc +
            "\" shares=\"1\" limit=\"1\">Order has nothing open to "
            "replace</error>");
  CHECK(d.tx("1", replace(gtc_stop, "1", "2")) ==
        "<error id=\"" + gtc_stop +
            "\" shares=\"1\" limit=\"2\">Order has nothing open to replace</error>");
  // The values: both attributes required, shares and limit positive.
  CHECK(d.tx("1", "<replace id=\"" + mine + "\" shares=\"5\"/>") ==
        "<error id=\"" + mine + "\" shares=\"5\">Missing attribute 'limit'</error>");
  CHECK(d.tx("1", replace(mine, "0", "5")) ==
        "<error id=\"" + mine +
            "\" shares=\"0\" limit=\"5\">Invalid shares: must be "
            "positive</error>");
  CHECK(d.tx("1", replace(mine, "5", "-1")) ==
        "<error id=\"" + mine +
            "\" shares=\"5\" limit=\"-1\">Invalid limit: must be "
            "positive</error>");
  // More cash than the balance has: refused, the order as it was. 10 @5 reserved 50; 200 @5
  // needs 950 more and the balance is 950, so 200.000001 @5 is a cent's fraction too much.
  CHECK(d.tx("1", replace(mine, "200.000001", "5")) ==
        "<error id=\"" + mine +
            "\" shares=\"200.000001\" limit=\"5\">Insufficient funds: order needs 950.000005, "
            "balance is 950</error>");
  CHECK(d.status("1", mine) == status(mine, open_("10")));
  CHECK(d.balance("1") == "950");
  CHECK(d.tx("1", replace(mine, "200", "5")) ==
        "<replaced id=\"" + mine + "\" shares=\"200\" limit=\"5\"/>");
  CHECK(d.balance("1") == "0");
  // An order without tif is GTC as before: the reply has no tif.
  CHECK(d.tx("2", limit_order("X", "1", "1")).find(" tif=") == std::string::npos);
  CHECK(d.position("1") == "90");
  projected_and_conserved();
}
