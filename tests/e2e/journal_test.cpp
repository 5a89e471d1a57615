// The journal is the durable record: a reply leaves once its journal row has committed, and the
// SQL tables are a projection written behind it. Crashes with the projection behind lose
// nothing acknowledged (start-up replays the journal after the projection's position), and a
// replay of the whole journal into an empty engine reproduces the live server's state.
#include <chrono>
#include <map>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "app/apply.hpp"
#include "app/replay.hpp"
#include "protocol/parse.hpp"
#include "protocol/render.hpp"
#include "store/database.hpp"
#include "support/random_traders.hpp"
#include "support/reply_xml.hpp"
#include "support/server_process.hpp"
#include "support/test_database.hpp"
#include "support/wire_client.hpp"

using namespace testing_support;
using market::Decimal;

namespace {

long long value(const std::string& sql) { return std::stoll(query_value(sql)); }

// Reads without waiting for the projection (query_value waits for it to catch up).
long long value_now(const std::string& sql) {
  auto conn = connect_database();
  pqxx::nontransaction tx(conn);
  return tx.exec1(sql)[0].as<long long>();
}

void check_projection_complete() {
  REQUIRE(wait_for_projection());
  CHECK(value("SELECT seq FROM projection_position") ==
        value("SELECT coalesce(max(seq), 0) FROM journal"));
  auto violations = conservation_violations();
  for (const auto& v : violations) UNSCOPED_INFO(v);
  CHECK(violations.empty());
  CHECK(query_value(kFillsMatchOrders) == "0");
}

// Every order's status as one <transactions> of <query> children per account.
std::map<std::string, std::string> status_queries() {
  std::map<std::string, std::string> out;
  auto conn = connect_database();
  pqxx::nontransaction tx(conn);
  for (const auto& row : tx.exec("SELECT account_id, id FROM orders ORDER BY account_id, id")) {
    std::string& xml = out[row[0].c_str()];
    if (xml.empty()) xml = "<transactions id=\"" + std::string(row[0].c_str()) + "\">";
    xml += "<query id=\"" + std::string(row[1].c_str()) + "\"/>";
  }
  for (auto& [account, xml] : out) xml += "</transactions>";
  return out;
}

}  // namespace

TEST_CASE(
    "journal: after a crash every acknowledged request is there and the projection "
    "catches up",
    "[e2e][journal]") {
  ServerProcess server({"--concurrency", "reactor", "--reset"});
  create_traders(server.port(), 700, 8, "J");
  RandomTraders traders(server.port(), 8, 700, 8, "J", 4242);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  server.kill();
  auto acked = traders.stop();
  REQUIRE(acked.size() > 20);

  server.restart();
  CHECK(missing_orders(server.port(), acked).empty());
  CHECK(server.log().find("journal entries in") != std::string::npos);
  check_projection_complete();
  CHECK(value("SELECT count(*) FROM orders") >= static_cast<long long>(acked.size()));
  CHECK(server.stop() == 0);
}

TEST_CASE("journal: a projection held back is rebuilt from the journal at start-up",
          "[e2e][journal]") {
  // The projector never writes (its delay outlasts the test), and closed orders are not kept
  // in memory: queries of closed orders must still be answered from memory, since the
  // tables do not have them yet.
  ServerProcess held({"--concurrency", "pool", "--reset", "--projector-delay-ms", "600000",
                      "--closed-orders-cached", "0"});
  create_traders(held.port(), 800, 8, "H");
  RandomTraders traders(held.port(), 8, 800, 8, "H", 777);
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  auto acked = traders.stop();
  REQUIRE(acked.size() > 20);
  CHECK(missing_orders(held.port(), acked).empty());
  held.kill();
  CHECK(value_now("SELECT seq FROM projection_position") == 0);
  CHECK(value_now("SELECT count(*) FROM accounts") == 0);
  const long long journaled = value_now("SELECT count(*) FROM journal");
  CHECK(journaled > static_cast<long long>(acked.size()) / 4);

  // Still held back: the whole journal is replayed into memory.
  held.restart();
  CHECK(missing_orders(held.port(), acked).empty());
  CHECK(held.log().find("replayed " + std::to_string(journaled) + " journal entries") !=
        std::string::npos);
  held.kill();

  // Without the delay the replay's effects reach the tables.
  ServerProcess server({"--concurrency", "pool", "--closed-orders-cached", "0"});
  CHECK(missing_orders(server.port(), acked).empty());
  check_projection_complete();
  CHECK(value("SELECT count(*) FROM orders") >= static_cast<long long>(acked.size()));
  CHECK(server.stop() == 0);
}

TEST_CASE("journal: replaying the whole journal into an empty engine gives the live state",
          "[e2e][journal]") {
  ServerProcess server({"--concurrency", "pool", "--reset", "--closed-orders-cached", "0"});
  create_traders(server.port(), 900, 10, "D");
  {
    RandomTraders traders(server.port(), 12, 900, 10, "D", 31337);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    REQUIRE(traders.stop().size() > 20);
  }
  check_projection_complete();

  market::Engine replayed;
  store::Database db(database_url());
  std::int64_t after = 0, entries = 0;
  for (;;) {
    auto chunk = db.read_journal(after, 1000);
    if (chunk.empty()) break;
    for (const auto& entry : chunk) {
      market::Effects fx;
      app::replay_entry(entry, replayed, fx);
    }
    after = chunk.back().seq;
    entries += static_cast<std::int64_t>(chunk.size());
  }
  REQUIRE(entries > 20);

  // The projection (the live server's effects) equals the replayed engine.
  auto conn = connect_database();
  pqxx::nontransaction tx(conn);
  int accounts = 0, positions = 0;
  for (const auto& row : tx.exec("SELECT id, balance FROM accounts")) {
    const market::Account* acct = replayed.account(row[0].c_str());
    REQUIRE(acct);
    CHECK(acct->cash.to_string() == Decimal::parse_stored(row[1].c_str()).to_string());
    ++accounts;
  }
  for (const auto& row : tx.exec("SELECT account_id, symbol, amount FROM positions")) {
    const market::Account* acct = replayed.account(row[0].c_str());
    REQUIRE(acct);
    auto pos = acct->positions.find(row[1].c_str());
    REQUIRE(pos != acct->positions.end());
    CHECK(pos->second.amount.to_string() == Decimal::parse_stored(row[2].c_str()).to_string());
    ++positions;
  }
  CHECK(accounts == 10);
  CHECK(positions >= 10);

  // The live server (memory, or the tables for closed orders) answers every order's query
  // exactly as the replayed engine does.
  int compared = 0;
  for (const auto& [account, xml] : status_queries()) {
    std::string live = send_request(server.port(), xml);
    market::Effects none;
    app::Admission admission = app::Admission::live(app::Limits{}, xml.size());
    app::Applied mine =
        app::apply(protocol::parse(xml, protocol::ParseLimits{}), replayed, 0, none, admission);
    CHECK(mine.archive_lookups.empty());
    CHECK(live == protocol::render(mine.result));
    ++compared;
  }
  CHECK(compared == 10);
  CHECK(server.stop() == 0);
}

TEST_CASE("journal: --journal-keep trims projected entries and a restart still has everything",
          "[e2e][journal]") {
  const long long keep = 50;
  ServerProcess server(
      {"--concurrency", "reactor", "--reset", "--journal-keep", std::to_string(keep)});
  create_traders(server.port(), 950, 8, "T");
  RandomTraders traders(server.port(), 8, 950, 8, "T", 9090);
  // Enough entries for several trims (one per 1,000 projected entries beyond the kept ones).
  for (int i = 0; i < 200 && value_now("SELECT coalesce(max(seq), 0) FROM journal") < 4000; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto acked = traders.stop();
  REQUIRE(value_now("SELECT coalesce(max(seq), 0) FROM journal") >= 4000);
  REQUIRE(wait_for_projection());
  // Trimmed behind the projection in chunks of 1,000, keeping at least `keep` entries.
  const long long projected = value("SELECT seq FROM projection_position");
  const long long first = value_now("SELECT coalesce(min(seq), 0) FROM journal");
  CHECK(first >= projected - keep - 1000);
  CHECK(first <= projected - keep + 1);
  CHECK(value_now("SELECT count(*) FROM journal") == projected - first + 1);

  server.kill();
  server.restart();
  CHECK(missing_orders(server.port(), acked).empty());
  check_projection_complete();
  CHECK(server.stop() == 0);
}
