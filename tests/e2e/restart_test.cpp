// Stop the server mid-stream (SIGTERM, and SIGKILL for a crash), start it again: every
// acknowledged order, fill and cancel is there, nothing else is, and new ids are new.
#include <chrono>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "support/checks.hpp"
#include "support/random_traders.hpp"
#include "support/reply_xml.hpp"
#include "support/server_process.hpp"
#include "support/test_database.hpp"
#include "support/wire_client.hpp"

using namespace testing_support;

TEST_CASE("a restart serves every acknowledged order, fill and cancel", "[e2e]") {
  bool crash = GENERATE(false, true);
  INFO((crash ? "SIGKILL" : "SIGTERM"));
  ServerProcess server({"--concurrency", "pool", "--reset"});
  create_traders(server.port(), 70, 6, "R");
  RandomTraders traders(server.port(), 8, 70, 6, "R", 99);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  if (crash)
    server.kill();
  else
    CHECK(server.stop() == 0);
  auto acked = traders.stop();
  REQUIRE(acked.size() > 20);

  // Nothing unacknowledged is half-applied: whatever is stored balances.
  check_conservation();
  CHECK(query_value(kFillsMatchOrders) == "0");

  server.restart();
  CHECK(missing_orders(server.port(), acked).empty());
  ParsedReply fresh;
  parse_reply(send_request(server.port(),
                           "<transactions id=\"70\"><order sym=\"R\" amount=\"1\" "
                           "limit=\"1\"/></transactions>"),
              fresh);
  REQUIRE(std::string(fresh.items.at(0).name()) == "opened");
  CHECK(std::stoll(fresh.items[0].attribute("id").value()) > acked.rbegin()->first);
  CHECK(server.stop() == 0);
}

TEST_CASE("ten crashes under load lose nothing acknowledged", "[e2e]") {
  ServerProcess server({"--concurrency", "pool", "--reset"});
  create_traders(server.port(), 300, 6, "K");
  std::map<long long, Acknowledged> all;
  for (int crash = 1; crash <= 10; ++crash) {
    INFO("crash " << crash);
    RandomTraders traders(server.port(), 8, 300, 6, "K", 1000u * crash);
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    server.kill();
    auto acked = traders.stop();
    // A cancel acknowledged in an earlier life stays canceled.
    for (const auto& [id, ack] : acked) {
      auto& seen = all[id];
      seen.account = ack.account;
      seen.canceled = seen.canceled || ack.canceled;
    }
    check_conservation();
    CHECK(query_value(kFillsMatchOrders) == "0");
    server.restart();
    auto missing = missing_orders(server.port(), all);
    CHECK(missing.empty());
  }
  CHECK(all.size() > 100);
  CHECK(server.stop() == 0);
}
