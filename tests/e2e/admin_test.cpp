// The admin port (--admin-port): /metrics in Prometheus' text format with counters that move by
// exactly the requests sent, /healthz that follows PostgreSQL's availability, and an admin
// port that a misbehaving HTTP client cannot use to disturb trading, nor to lock operators out
// (idle and slowloris connections give way at the cap and are closed at the deadline).
#include <chrono>
#include <cstdlib>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "support/admin_scrape.hpp"
#include "support/checks.hpp"
#include "support/environment.hpp"
#include "support/raw_client.hpp"
#include "support/server_process.hpp"
#include "support/wire_client.hpp"

using namespace testing_support;

namespace {

std::string order(const std::string& account, int amount) {
  return "<transactions id=\"" + account + "\"><order sym=\"ADM\" amount=\"" +
         std::to_string(amount) + "\" limit=\"10\"/></transactions>";
}

}  // namespace

TEST_CASE("/metrics counts exactly the requests sent, by root and outcome", "[e2e][admin]") {
  const unsigned short admin = free_port();
  ServerProcess server({"--reset", "--admin-port", std::to_string(admin)});
  const std::string ok_tx = "exchange_requests_total{root=\"transactions\",outcome=\"ok\"}";
  const std::string ok_create = "exchange_requests_total{root=\"create\",outcome=\"ok\"}";
  const std::string rejected = "exchange_requests_total{root=\"invalid\",outcome=\"rejected\"}";

  HttpReply before = http_get(admin, "/metrics");
  REQUIRE(before.status == 200);
  CHECK(series(before.body, ok_tx) == 0);
  CHECK(before.body.find("# TYPE exchange_request_duration_seconds histogram") !=
        std::string::npos);

  send_request(server.port(),
               "<create><account id=\"71\" balance=\"1000\"/>"
               "<symbol sym=\"ADM\"><account id=\"71\">100</account></symbol></create>");
  for (int i = 0; i < 7; ++i) send_request(server.port(), order("71", i % 2 ? 1 : -1));
  send_request(server.port(), "<not-xml");
  send_request(server.port(), "<query/>");  // well-formed, unknown root: refused as a whole

  HttpReply after = http_get(admin, "/metrics");
  REQUIRE(after.status == 200);
  CHECK(series(after.body, ok_create) == 1);
  CHECK(series(after.body, ok_tx) == 7);
  CHECK(series(after.body, rejected) == 2);
  CHECK(series(after.body, "exchange_request_duration_seconds_count") == 10);
  // Every order and the create committed: 8 commit waits, and at least one group commit.
  CHECK(series(after.body, "exchange_commit_wait_seconds_count") == 8);
  CHECK(series(after.body, "exchange_commit_batch_requests_sum") == 8);
  CHECK(series(after.body, "exchange_commits_failed_total") == 0);
  CHECK(series(after.body, "exchange_orders_resting") >= 1);
  CHECK(series(after.body, "process_resident_memory_bytes") > 1e6);

  CHECK(http_get(admin, "/nope").status == 404);
  // A client that speaks no HTTP at all gets nothing, and trading is not disturbed.
  send_raw(admin, std::string("\x16\x03\x01\x00\xff garbage\r\n\r\n", 16));
  CHECK(send_request(server.port(), order("71", 1)).find("<opened") != std::string::npos);
  CHECK(server.stop() == 0);
}

TEST_CASE("/healthz is 503 while PostgreSQL is down and 200 once it is back", "[e2e][admin]") {
  const std::string dir = env_or_empty("EXCHANGE_TEST_PG_DIR");
  const std::string port = env_or_empty("EXCHANGE_TEST_PG_PORT");
  const std::string local_pg = env_or_empty("EXCHANGE_TEST_LOCAL_PG");
  if (dir.empty() || port.empty() || local_pg.empty()) {
    WARN("EXCHANGE_TEST_PG_DIR/PORT/LOCAL_PG unset: not stopping someone else's PostgreSQL");
    return;
  }
  const unsigned short admin = free_port();
  ServerProcess server({"--admin-port", std::to_string(admin), "--db-timeout-ms", "1000"});
  HttpReply up = http_get(admin, "/healthz");
  CHECK(up.status == 200);
  CHECK(up.body == "ok\n");

  REQUIRE(std::system((local_pg + " stop " + dir + " >/dev/null 2>&1").c_str()) == 0);
  HttpReply down;
  for (int i = 0; i < 100 && down.status != 503; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    down = http_get(admin, "/healthz");
  }
  REQUIRE(std::system((local_pg + " start " + dir + " " + port + " >/dev/null 2>&1").c_str()) == 0);
  CHECK(down.status == 503);
  INFO("503 body: " << down.body);
  CHECK(down.body.find("PostgreSQL has not answered") != std::string::npos);

  HttpReply back;
  for (int i = 0; i < 100 && back.status != 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    back = http_get(admin, "/healthz");
  }
  CHECK(back.status == 200);
  CHECK(server.stop() == 0);
}

TEST_CASE("/healthz answers while more idle clients than the cap hold the admin port open",
          "[e2e][admin]") {
  const unsigned short admin = free_port();
  // A deadline longer than the test: only giving way at the cap can make room for /healthz.
  ServerProcess server({"--admin-port", std::to_string(admin), "--admin-timeout-ms", "600000"});
  const int cap = 64;                            // the default --admin-max-connections
  std::vector<std::unique_ptr<RawClient>> idle;  // idle clients
  for (int i = 0; i < cap + 20; ++i) idle.push_back(std::make_unique<RawClient>(admin));

  int answered = 0;
  for (int i = 0; i < 100; ++i)
    if (http_get(admin, "/healthz").status == 200) ++answered;
  CHECK(answered == 100);
  // The room was made by closing the oldest idle connections.
  CHECK(idle.front()->ended_within(std::chrono::seconds(10)));
  CHECK(server.stop() == 0);
}

TEST_CASE("a slowloris client is closed long before its headers are complete", "[e2e][admin]") {
  const unsigned short admin = free_port();
  ServerProcess server({"--admin-port", std::to_string(admin), "--admin-timeout-ms", "1000"});
  // Headers up to the 8 KiB limit, dripped a byte every 300 ms: each byte would reset a
  // deadline per read, so only a deadline for the whole request closes this client.
  const std::string headers =
      "GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Pad: " + std::string(8 * 1024 - 60, 'a') +
      "\r\n\r\n";
  RawClient loris(admin);  // sends only what it is told to
  bool closed = false;
  std::size_t sent = 0;
  // 200 bytes take a minute: 60 times the deadline, a bound only for a server that never
  // closes it.
  while (!closed && sent < 200) {
    closed = !loris.try_send(headers.substr(sent++, 1)) ||
             loris.ended_within(std::chrono::milliseconds(300));
  }
  INFO("bytes sent before the server closed the connection: " << sent);
  CHECK(closed);
  CHECK(http_get(admin, "/healthz").status == 200);
  CHECK(server.stop() == 0);
}

TEST_CASE("the admin port's limits are flags, checked at start-up", "[e2e][admin]") {
  const std::string admin = std::to_string(free_port());
  for (const std::string flag : {"--admin-max-connections", "--admin-timeout-ms"}) {
    INFO(flag << " 0");
    std::string output;
    CHECK(run_to_exit({"--admin-port", admin, flag, "0"}, output) == 2);
    CHECK(contains(output, flag + " must be an integer at least 1"));
  }
  // The smallest cap still lets /healthz through past an idle client.
  ServerProcess server(
      {"--admin-port", admin, "--admin-max-connections", "1", "--admin-timeout-ms", "60000"});
  RawClient idle(std::stoi(admin));
  CHECK(http_get(std::stoi(admin), "/healthz").status == 200);
  CHECK(idle.ended_within(std::chrono::seconds(10)));
  CHECK(server.stop() == 0);
}
