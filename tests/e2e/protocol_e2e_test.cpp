// The whole protocol against the real server over real sockets, for every concurrency model,
// with PostgreSQL behind it. Balances and positions are observed through the protocol: an
// order for exactly what is available is accepted and one for a cent (or a share) more is not.
#include <string>

#include <catch2/catch.hpp>

#include "support/reply_xml.hpp"
#include "support/server_process.hpp"
#include "support/test_database.hpp"
#include "support/wire_client.hpp"

using namespace testing_support;

namespace {

const std::string kDecl = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";

struct Exchange {
  ServerProcess server;
  explicit Exchange(const std::string& model, std::vector<std::string> extra = {})
      : server(flags(model, std::move(extra))) {}
  static std::vector<std::string> flags(const std::string& model, std::vector<std::string> extra) {
    std::vector<std::string> f = {"--concurrency", model, "--threads", "3", "--reset"};
    f.insert(f.end(), extra.begin(), extra.end());
    return f;
  }

  // Sends a request; returns the reply parsed.
  void send(const std::string& body, ParsedReply& reply) {
    parse_reply(send_request(server.port(), kDecl + body), reply);
  }
  std::string order(const std::string& account, const std::string& sym, const std::string& amount,
                    const std::string& limit) {
    ParsedReply r;
    send("<transactions id=\"" + account + "\"><order sym=\"" + sym + "\" amount=\"" + amount +
             "\" limit=\"" + limit + "\"/></transactions>",
         r);
    REQUIRE(r.items.size() == 1);
    if (std::string(r.items[0].name()) != "opened") return "";
    return r.items[0].attribute("id").value();
  }
  bool accepted(const std::string& account, const std::string& sym, const std::string& amount,
                const std::string& limit) {
    return !order(account, sym, amount, limit).empty();
  }
  void create(const std::string& body) {
    ParsedReply r;
    send("<create>" + body + "</create>", r);
    for (auto item : r.items) REQUIRE(std::string(item.name()) == "created");
  }
};

std::string account(const std::string& id, const std::string& balance) {
  return "<account id=\"" + id + "\" balance=\"" + balance + "\"/>";
}
std::string shares(const std::string& sym, const std::string& id, const std::string& n) {
  return "<symbol sym=\"" + sym + "\"><account id=\"" + id + "\">" + n + "</account></symbol>";
}

}  // namespace

TEST_CASE("PROTOCOL.md worked example over sockets", "[e2e]") {
  auto model = GENERATE(from_range(models_under_test()));
  INFO("model " << model);
  Exchange ex(model);
  ex.create(account("1", "1000000") + account("2", "0") + shares("X", "2", "1500"));

  std::string ids[8];
  ids[1] = ex.order("1", "X", "300", "125");
  ids[2] = ex.order("2", "X", "-100", "130");
  ids[3] = ex.order("1", "X", "200", "127");
  ids[4] = ex.order("2", "X", "-500", "128");
  ids[5] = ex.order("2", "X", "-200", "140");
  ids[6] = ex.order("1", "X", "400", "125");
  for (int i = 1; i <= 6; ++i) REQUIRE_FALSE(ids[i].empty());
  ids[7] = ex.order("2", "X", "-400", "124");
  REQUIRE_FALSE(ids[7].empty());

  ParsedReply r;
  ex.send("<transactions id=\"1\"><query id=\"" + ids[1] + "\"/></transactions>", r);
  auto status = r.items.at(0);
  CHECK(std::string(status.name()) == "status");
  CHECK(std::string(status.child("open").attribute("shares").value()) == "100");
  CHECK(std::string(status.child("executed").attribute("shares").value()) == "200");
  CHECK(std::string(status.child("executed").attribute("price").value()) == "125");

  ParsedReply r7;
  ex.send("<transactions id=\"2\"><query id=\"" + ids[7] + "\"/></transactions>", r7);
  auto s7 = r7.items.at(0);
  CHECK_FALSE(s7.child("open"));
  auto first = s7.child("executed");
  auto second = first.next_sibling("executed");
  CHECK(std::string(first.attribute("shares").value()) == "200");
  CHECK(std::string(first.attribute("price").value()) == "127");
  CHECK(std::string(second.attribute("shares").value()) == "200");
  CHECK(std::string(second.attribute("price").value()) == "125");

  // Seller received 200*127 + 200*125; buyer paid the same out of its reservations.
  CHECK(query_value("SELECT balance FROM accounts WHERE id = '2'") == "50400");
  // Buyer: 1000000 - 300*125 - 200*127 - 400*125 reserved; the fills were at the limits.
  CHECK(ex.accepted("1", "X", "8871", "100"));  // below every resting sell: no fill
  CHECK_FALSE(ex.accepted("1", "X", "0.000001", "0.01"));
  CHECK(conservation_violations().empty());
}

TEST_CASE("reservations and refunds are exact to the cent", "[e2e]") {
  auto model = GENERATE(from_range(models_under_test()));
  INFO("model " << model);
  Exchange ex(model);
  ex.create(account("10", "1000") + account("20", "0") + shares("SPY", "20", "50"));

  SECTION("a buy for exactly the balance is accepted, a cent more is not") {
    CHECK_FALSE(ex.accepted("10", "SPY", "10", "100.001"));
    CHECK_FALSE(ex.accepted("10", "SPY", "1", "1000.01"));
    CHECK(ex.accepted("10", "SPY", "10", "100"));
    CHECK_FALSE(ex.accepted("10", "SPY", "1", "0.01"));
  }
  SECTION("a sell of exactly the position is accepted, a fraction more is not") {
    CHECK_FALSE(ex.accepted("20", "SPY", "-50.000001", "1"));
    CHECK(ex.accepted("20", "SPY", "-50", "1"));
    CHECK_FALSE(ex.accepted("20", "SPY", "-0.000001", "1"));
  }
  SECTION("a fill below the buy limit refunds the difference") {
    REQUIRE(ex.accepted("20", "SPY", "-10", "90"));
    REQUIRE(ex.accepted("10", "SPY", "10", "100"));  // executes at 90: pays 900, not 1000
    CHECK(ex.accepted("10", "SPY", "1", "100"));     // 100 left, all of it
    CHECK_FALSE(ex.accepted("10", "SPY", "0.01", "1"));
    // The buyer now holds 10 shares to sell, and the seller 900 to spend.
    CHECK(ex.accepted("10", "SPY", "-10", "500"));
    CHECK(ex.accepted("20", "SPY", "1", "900"));
  }
  SECTION("a cancel gives the reservation back") {
    std::string id = ex.order("10", "SPY", "4", "250");
    REQUIRE_FALSE(id.empty());
    CHECK_FALSE(ex.accepted("10", "SPY", "1", "0.01"));
    ParsedReply r;
    ex.send("<transactions id=\"10\"><cancel id=\"" + id + "\"/></transactions>", r);
    REQUIRE(std::string(r.items.at(0).name()) == "canceled");
    CHECK(std::string(r.items[0].child("canceled").attribute("shares").value()) == "4");
    CHECK(ex.accepted("10", "SPY", "1", "1000"));
  }
  CHECK(conservation_violations().empty());
}

TEST_CASE("create replies in document order, errors carry the child's attributes", "[e2e]") {
  auto model = GENERATE(from_range(models_under_test()));
  INFO("model " << model);
  Exchange ex(model);
  ParsedReply r;
  ex.send(
      "<create><account id=\"5\" balance=\"10\"/><account id=\"5\" balance=\"10\"/>"
      "<symbol sym=\"AB\"><account id=\"5\">7.5</account><account id=\"6\">1</account>"
      "<account id=\"5\">abc</account></symbol><account id=\"7\" balance=\"-1\"/></create>",
      r);
  REQUIRE(r.items.size() == 6);
  CHECK(std::string(r.items[0].name()) == "created");
  CHECK(std::string(r.items[1].name()) == "error");
  CHECK(std::string(r.items[1].attribute("id").value()) == "5");
  CHECK(std::string(r.items[1].text().get()) == "Account already exists");
  CHECK(std::string(r.items[2].name()) == "created");
  CHECK(std::string(r.items[2].attribute("sym").value()) == "AB");
  CHECK(std::string(r.items[3].name()) == "error");
  CHECK(std::string(r.items[3].attribute("id").value()) == "6");
  CHECK(std::string(r.items[4].name()) == "error");
  CHECK(std::string(r.items[5].name()) == "error");
  CHECK(query_value("SELECT amount FROM positions WHERE account_id = '5'") == "7.5");
}

TEST_CASE("transactions: own orders only, unknown accounts, echoes", "[e2e]") {
  auto model = GENERATE(from_range(models_under_test()));
  INFO("model " << model);
  Exchange ex(model);
  ex.create(account("1", "100") + account("2", "100"));
  ex.create(shares("Q", "1", "10"));
  std::string id = ex.order("1", "Q", "-5", "3");
  REQUIRE_FALSE(id.empty());

  ParsedReply r;
  ex.send("<transactions id=\"2\"><query id=\"" + id + "\"/><cancel id=\"" + id +
              "\"/><query id=\"999999\"/></transactions>",
          r);
  REQUIRE(r.items.size() == 3);
  for (auto item : r.items) CHECK(std::string(item.name()) == "error");
  // Not revealing: someone else's order and a missing one read the same.
  CHECK(std::string(r.items[0].text().get()) == std::string(r.items[2].text().get()));

  ParsedReply unknown;
  ex.send("<transactions id=\"42\"><order sym=\"Q\" amount=\"1\" limit=\"1\"/><query id=\"" + id +
              "\"/></transactions>",
          unknown);
  REQUIRE(unknown.items.size() == 2);
  CHECK(std::string(unknown.items[0].attribute("sym").value()) == "Q");
  CHECK(std::string(unknown.items[0].attribute("limit").value()) == "1");
  CHECK(std::string(unknown.items[1].attribute("id").value()) == id);

  ParsedReply echo;
  ex.send(
      "<transactions id=\"2\"><order sym=\"Q\" amount=\"+002.50\" limit=\"1.0\"/>"
      "<order sym=\"NOPE\" amount=\"1\" limit=\"1\"/></transactions>",
      echo);
  CHECK(std::string(echo.items.at(0).name()) == "opened");
  CHECK(std::string(echo.items[0].attribute("amount").value()) == "+002.50");
  CHECK(std::string(echo.items[0].attribute("limit").value()) == "1.0");
  CHECK(std::string(echo.items.at(1).name()) == "error");

  // Later children see earlier ones: an order then its own cancel in one request.
  ParsedReply seq;
  ex.send("<transactions id=\"1\"><order sym=\"Q\" amount=\"-1\" limit=\"50\"/><cancel id=\"" +
              std::to_string(std::stoll(id) + 2) + "\"/></transactions>",
          seq);
  CHECK(std::string(seq.items.at(0).name()) == "opened");
  CHECK(std::string(seq.items.at(1).name()) == "canceled");
}

TEST_CASE("bad requests get an error and the server keeps serving", "[e2e]") {
  auto model = GENERATE(from_range(models_under_test()));
  INFO("model " << model);
  Exchange ex(model);
  auto is_error_reply = [](const std::string& reply) {
    ParsedReply r;
    parse_reply(reply, r);
    return r.items.size() == 1 && std::string(r.items[0].name()) == "error";
  };
  CHECK(is_error_reply(send_raw(ex.server.port(), "hello\n<create/>")));
  CHECK(is_error_reply(send_raw(ex.server.port(), "1000000000000\n<create/>")));
  CHECK(is_error_reply(send_request(ex.server.port(), "<create><account")));
  CHECK(is_error_reply(send_request(ex.server.port(), "<sell/>")));
  CHECK(is_error_reply(send_request(ex.server.port(), "<transactions id=\"1\"/>")));
  CHECK(is_error_reply(send_request(ex.server.port(), "<create>\xff\xfe</create>")));
  // Fewer bytes than announced, then EOF from the client side.
  {
    std::string reply = send_raw(ex.server.port(), "100\n<create>");
    CHECK((reply.empty() || is_error_reply(reply)));
  }
  ParsedReply ok;
  ex.send("<create><account id=\"77\" balance=\"1\"/></create>", ok);
  CHECK(std::string(ok.items.at(0).name()) == "created");
}

TEST_CASE("persistent sessions carry many requests on one connection", "[e2e]") {
  auto model = GENERATE(from_range(models_under_test()));
  INFO("model " << model);
  Exchange ex(model);
  Session session(ex.server.port());
  for (int i = 0; i < 20; ++i) {
    ParsedReply r;
    parse_reply(session.request(kDecl + "<create><account id=\"" + std::to_string(1000 + i) +
                                "\" balance=\"5\"/></create>"),
                r);
    CHECK(std::string(r.items.at(0).name()) == "created");
  }
  CHECK(query_value("SELECT count(*) FROM accounts") == "20");
}

TEST_CASE("a reply leaves only after its effects are committed", "[e2e]") {
  auto model = GENERATE(from_range(models_under_test()));
  INFO("model " << model);
  Exchange ex(model);
  ex.create(account("3", "500") + shares("Z", "3", "9"));
  std::string id = ex.order("3", "Z", "-4", "2");
  REQUIRE_FALSE(id.empty());
  // Read straight after the reply, on another connection: already there.
  CHECK(query_value("SELECT open_amount FROM orders WHERE id = " + id) == "4");
  CHECK(query_value("SELECT amount FROM positions WHERE account_id = '3'") == "5");
  CHECK(ex.server.stop() == 0);
}

TEST_CASE("closed orders no longer in memory are answered from the database", "[e2e]") {
  auto model = GENERATE(from_range(models_under_test()));
  INFO("model " << model);
  // Keep no closed order in memory: every query of one goes to PostgreSQL.
  Exchange ex(model, {"--closed-orders-cached", "0"});
  ex.create(account("1", "1000") + account("2", "0") + shares("C", "2", "10"));
  std::string sell = ex.order("2", "C", "-4", "10.5");
  std::string buy = ex.order("1", "C", "4", "11");  // fills the sell completely at 10.5
  std::string other = ex.order("2", "C", "-3", "12");
  REQUIRE_FALSE(other.empty());
  ParsedReply canceled;
  ex.send("<transactions id=\"2\"><cancel id=\"" + other + "\"/></transactions>", canceled);
  REQUIRE(std::string(canceled.items.at(0).name()) == "canceled");
  // A later write lets the engine forget the closed orders once they are durable.
  ex.create(account("3", "1"));

  ParsedReply r;
  ex.send("<transactions id=\"2\"><query id=\"" + sell + "\"/><query id=\"" + other +
              "\"/><query id=\"" + buy + "\"/><cancel id=\"" + sell + "\"/></transactions>",
          r);
  REQUIRE(r.items.size() == 4);
  CHECK(std::string(r.items[0].name()) == "status");
  CHECK_FALSE(r.items[0].child("open"));
  CHECK(std::string(r.items[0].child("executed").attribute("shares").value()) == "4");
  CHECK(std::string(r.items[0].child("executed").attribute("price").value()) == "10.5");
  CHECK(std::string(r.items[1].name()) == "status");
  CHECK(std::string(r.items[1].child("canceled").attribute("shares").value()) == "3");
  CHECK(std::string(r.items[2].name()) == "error");  // account 1's order
  CHECK(std::string(r.items[3].name()) == "error");  // nothing open to cancel
  // The buyer paid 4 x 10.5 and got 4 x 0.5 back: exactly 958 left.
  CHECK(ex.accepted("1", "C", "958", "1"));
  CHECK_FALSE(ex.accepted("1", "C", "0.01", "1"));
}
