// Issue 20's findings, tried as an attacker would with well-formed requests, against the real
// server and PostgreSQL: each cost a client controls meets a limit that names its flag, nothing
// over a limit is journaled or projected, a replay after a restart refuses what the live run
// refused, and /healthz stops saying 200 while the projection is stuck. No timing is asserted
// beyond generous deadlines.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <pqxx/pqxx>

#include "support/admin_scrape.hpp"
#include "support/reply_xml.hpp"
#include "support/server_process.hpp"
#include "support/test_database.hpp"
#include "support/wire_client.hpp"

using namespace testing_support;

namespace {

const std::string kDecl = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";

std::string journal_rows() { return query_value("SELECT count(*) FROM journal"); }

std::string create_account(const std::string& id, const std::string& balance) {
  return kDecl + "<create><account id=\"" + id + "\" balance=\"" + balance + "\"/></create>";
}

std::string shares(const std::string& sym, const std::string& account, int n) {
  return kDecl + "<create><symbol sym=\"" + sym + "\"><account id=\"" + account + "\">" +
         std::to_string(n) + "</account></symbol></create>";
}

std::string orders(const std::string& account, const std::string& body) {
  return kDecl + "<transactions id=\"" + account + "\">" + body + "</transactions>";
}

std::string order(const std::string& sym, int amount, const std::string& limit) {
  return "<order sym=\"" + sym + "\" amount=\"" + std::to_string(amount) + "\" limit=\"" + limit +
         "\"/>";
}

}  // namespace

TEST_CASE(
    "A long id or symbol is refused before it is journaled, so it cannot wedge the "
    "projection",
    "[e2e][limits]") {
  ServerProcess server({"--reset"});
  const std::string before = journal_rows();
  const std::string long_id(10000, '7');
  CHECK_THAT(single_error(send_request(server.port(), create_account(long_id, "10"))),
             Catch::Contains("--max-id-length"));
  CHECK_THAT(single_error(send_request(server.port(), shares(std::string(5000, 'S'), "1", 5))),
             Catch::Contains("--max-symbol-length"));
  CHECK_THAT(single_error(send_request(server.port(), orders(long_id, order("X", 1, "1")))),
             Catch::Contains("--max-id-length"));
  CHECK(journal_rows() == before);

  // The limits are flags: a server allowed 40-digit ids takes one, and the projection holds it.
  server.stop();
  ServerProcess wider({"--max-id-length", "40"});
  const std::string id40(40, '4');
  CHECK(item_kinds(send_request(wider.port(), create_account(id40, "10"))) == "created");
  CHECK(query_value("SELECT count(*) FROM accounts WHERE id = '" + id40 + "'") == "1");
}

TEST_CASE("An element with very many attributes is refused in linear time", "[e2e][limits]") {
  ServerProcess server({"--reset", "--max-request-bytes", std::to_string(4 << 20)});
  // 150,000 distinct attributes: the old pairwise duplicate check took minutes of CPU.
  std::string xml = kDecl + "<create><account id=\"1\" balance=\"1\"";
  for (int i = 0; i < 150000; ++i) xml += " a" + std::to_string(i) + "=\"\"";
  xml += "/></create>";
  CHECK_THAT(single_error(send_request(server.port(), xml)), Catch::Contains("--max-attributes"));
  // And the server goes on serving.
  CHECK(item_kinds(send_request(server.port(), create_account("2", "1"))) == "created");
}

TEST_CASE("A reply stays within its budget: many queries of a much-executed order",
          "[e2e][limits]") {
  ServerProcess server({"--reset"});
  REQUIRE(item_kinds(send_request(server.port(), create_account("1", "1000000"))) == "created");
  REQUIRE(item_kinds(send_request(server.port(), create_account("2", "0"))) == "created");
  REQUIRE(item_kinds(send_request(server.port(), shares("AMP", "2", 2000))) == "created");
  std::string sells;
  for (int i = 0; i < 2000; ++i) sells += order("AMP", -1, "1");
  send_request(server.port(), orders("2", sells));
  // One buy sweeps the 2,000 sells: order 2001 has 2,000 executions (~190 KB as a status).
  const std::string bought = send_request(server.port(), orders("1", order("AMP", 2000, "1")));
  REQUIRE_THAT(bought, Catch::Contains("id=\"2001\""));

  std::string queries;
  for (int i = 0; i < 100; ++i) queries += "<query id=\"2001\"/>";
  const std::string request = orders("1", queries);
  const std::string reply = send_request(server.port(), request);
  // Before: 100 statuses, about 19 MB. Now at most 64 times the request (64 KiB allowed).
  CHECK(reply.size() <= std::max<std::size_t>(64 * request.size(), 64 * 1024 + 4096));
  CHECK_THAT(reply, Catch::Contains("--max-reply-ratio"));
  // A single query of it (a larger reply than 64 KiB) is refused, but with room it is answered.
  CHECK_THAT(send_request(server.port(), orders("1", "<query id=\"2001\"/>")),
             Catch::Contains("--max-reply-bytes"));
  server.stop();
  ServerProcess roomy({"--max-reply-ratio", "100000"});
  const std::string one = send_request(roomy.port(), orders("1", "<query id=\"2001\"/>"));
  ParsedReply r;
  parse_reply(one, r);
  REQUIRE(r.items.size() == 1);
  CHECK(std::string(r.items[0].name()) == "status");
}

TEST_CASE(
    "Caps on accounts, symbols, open orders and executions name their flags, and a "
    "replay after a crash refuses exactly what the live run refused",
    "[e2e][limits]") {
  // The projection is held back, so the restart below rebuilds from the journal.
  ServerProcess server({"--reset", "--max-accounts", "2", "--max-symbols", "1",
                        "--max-open-orders-per-account", "3", "--max-executions-per-request", "2",
                        "--projector-delay-ms", "600000"});
  const auto port = server.port();
  CHECK(item_kinds(send_request(port, create_account("1", "1000"))) == "created");
  CHECK(item_kinds(send_request(port, create_account("2", "1000"))) == "created");
  CHECK_THAT(single_error(send_request(port, create_account("3", "1000"))),
             Catch::Contains("--max-accounts"));
  CHECK(item_kinds(send_request(port, shares("A", "2", 100))) == "created");
  CHECK_THAT(single_error(send_request(port, shares("B", "2", 100))),
             Catch::Contains("--max-symbols"));

  // Four sells in one request: the fourth would be the account's fourth resting order.
  const std::string four =
      send_request(port, orders("2", order("A", -1, "10") + order("A", -1, "11") +
                                         order("A", -1, "12") + order("A", -1, "13")));
  CHECK(item_kinds(four) == "opened,opened,opened,error");
  CHECK_THAT(four, Catch::Contains("--max-open-orders-per-account"));
  // A buy of 3 would execute against three resting sells; two are allowed per request. Once a
  // child is refused for it the request has nothing left: the buy of 1 after it is refused too
  // (each refused child used to start again with the whole budget: PROTOCOL.md section 7).
  const std::string buys =
      send_request(port, orders("1", order("A", 3, "20") + order("A", 1, "20")));
  CHECK(item_kinds(buys) == "error,error");
  CHECK_THAT(buys, Catch::Contains("--max-executions-per-request"));
  // A request of its own has the whole budget again: a buy of 2 (leaving one for later).
  CHECK(item_kinds(send_request(port, orders("1", order("A", 2, "20")))) == "opened");

  const std::string status_before = send_request(port, orders("1", "<query id=\"4\"/>"));
  server.kill();
  // No limits now: the replay must still refuse what the live run refused.
  ServerProcess after({"--projector-delay-ms", "0"});
  const auto p2 = after.port();
  // Order ids continue after the four the live run assigned (the refused ones took none).
  const std::string next = send_request(p2, orders("2", order("A", -1, "30")));
  CHECK_THAT(next, Catch::Contains("id=\"5\""));
  CHECK(send_request(p2, orders("1", "<query id=\"4\"/>")) == status_before);
  CHECK(item_kinds(send_request(p2, create_account("3", "1"))) == "created");
  CHECK(query_value("SELECT count(*) FROM accounts") == "3");
  CHECK(query_value("SELECT count(*) FROM symbols") == "1");
  CHECK(query_value("SELECT count(*) FROM executions") == "2");
  CHECK(conservation_violations().empty());
}

TEST_CASE(
    "/healthz turns 503 with the reason while the projection is stuck, and 200 once it "
    "caught up; the stuck backends are ended",
    "[e2e][limits][admin]") {
  const unsigned short admin = free_port();
  ServerProcess server({"--reset", "--admin-port", std::to_string(admin), "--db-timeout-ms", "1000",
                        "--ready-max-lag-ms", "3000"});
  REQUIRE(item_kinds(send_request(server.port(), create_account("1", "10"))) == "created");
  REQUIRE(wait_for_projection());
  REQUIRE(http_get(admin, "/healthz").status == 200);

  // Another session locks the accounts table: every projection write now waits, is cut off
  // by --db-timeout-ms and retried. The journal (and so every reply) goes on.
  auto blocker = connect_database();
  pqxx::work lock(blocker);
  lock.exec("LOCK TABLE accounts IN ACCESS EXCLUSIVE MODE");
  CHECK(item_kinds(send_request(server.port(), create_account("2", "10"))) == "created");

  HttpReply health;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    health = http_get(admin, "/healthz");
    if (health.status == 503) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  CHECK(health.status == 503);
  CHECK_THAT(health.body, Catch::Contains("projection"));
  // The writes cut off by the timeout do not pile up as waiting backends.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  {
    auto conn = connect_database();
    pqxx::nontransaction q(conn);
    auto waiting =
        q.exec1(
             "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'exchange-projector' "
             "AND wait_event_type = 'Lock'")[0]
            .as<int>();
    CHECK(waiting <= 1);
  }
  const std::string metrics = http_get(admin, "/metrics").body;
  CHECK_THAT(metrics, Catch::Contains("exchange_projection_lag_seconds"));
  CHECK_THAT(metrics, Catch::Contains("exchange_projection_failures_total"));

  lock.abort();
  REQUIRE(wait_for_projection(std::chrono::seconds(30)));
  HttpReply back;
  const auto back_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < back_deadline) {
    back = http_get(admin, "/healthz");
    if (back.status == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  CHECK(back.status == 200);
  CHECK(query_value("SELECT count(*) FROM accounts") == "2");
}
