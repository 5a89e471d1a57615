// Stop the server mid-stream (SIGTERM, and SIGKILL for a crash), start it again: every
// acknowledged order, fill and cancel is there, nothing else is, and new ids are new.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support/reply_xml.hpp"
#include "support/server_process.hpp"
#include "support/test_database.hpp"
#include "support/wire_client.hpp"

using namespace testing_support;

namespace {

struct Acknowledged {
  std::string account;
  bool canceled = false;
};

const int kAccounts = 6;

void setup(unsigned short port) {
  std::string xml = "<create>";
  for (int a = 0; a < kAccounts; ++a)
    xml += "<account id=\"" + std::to_string(70 + a) + "\" balance=\"1000000\"/>";
  xml += "<symbol sym=\"R\">";
  for (int a = 0; a < kAccounts; ++a)
    xml += "<account id=\"" + std::to_string(70 + a) + "\">100000</account>";
  xml += "</symbol></create>";
  ParsedReply r;
  parse_reply(send_request(port, xml), r);
  for (auto item : r.items) REQUIRE(std::string(item.name()) == "created");
}

// Clients trade until the server goes away; returns what was acknowledged.
std::map<long long, Acknowledged> trade_until_stopped(ServerProcess& server, bool crash) {
  std::mutex mutex;
  std::map<long long, Acknowledged> acked;
  std::atomic<bool> server_gone{false};
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&, c] {
      std::mt19937 rng(99 + c);
      std::string account = std::to_string(70 + c % kAccounts);
      std::vector<long long> mine;
      while (!server_gone) {
        std::string xml = "<transactions id=\"" + account + "\">";
        bool cancel = !mine.empty() && rng() % 3 == 0;
        long long target = cancel ? mine[rng() % mine.size()] : 0;
        if (cancel)
          xml += "<cancel id=\"" + std::to_string(target) + "\"/>";
        else
          xml += "<order sym=\"R\" amount=\"" + std::string(rng() % 2 ? "-" : "") +
                 std::to_string(1 + rng() % 20) + "\" limit=\"" + std::to_string(95 + rng() % 10) +
                 "\"/>";
        xml += "</transactions>";
        std::string reply;
        try {
          reply = send_request(server.port(), xml);
        } catch (const std::exception&) {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
          continue;  // refused: the server is stopping; nothing was acknowledged
        }
        ParsedReply r;
        try {
          parse_reply(reply, r);
        } catch (const std::exception&) {
          continue;  // cut off mid-reply by the kill: not an acknowledgement
        }
        if (r.items.empty()) continue;
        std::string name = r.items[0].name();
        std::lock_guard<std::mutex> lock(mutex);
        if (name == "opened") {
          long long id = std::stoll(r.items[0].attribute("id").value());
          mine.push_back(id);
          acked[id] = {account, false};
        } else if (name == "canceled") {
          acked[target].canceled = true;
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  if (crash) {
    server.kill();
  } else {
    CHECK(server.stop() == 0);
  }
  server_gone = true;
  for (auto& t : clients) t.join();
  return acked;
}

}  // namespace

TEST_CASE("a restart serves every acknowledged order, fill and cancel", "[e2e]") {
  bool crash = GENERATE(false, true);
  INFO((crash ? "SIGKILL" : "SIGTERM"));
  ServerProcess server({"--concurrency", "pool", "--reset"});
  setup(server.port());
  auto acked = trade_until_stopped(server, crash);
  REQUIRE(acked.size() > 20);

  // Nothing unacknowledged is half-applied: whatever is stored balances.
  auto violations = conservation_violations();
  for (const auto& v : violations) UNSCOPED_INFO(v);
  CHECK(violations.empty());

  server.restart();
  int checked = 0;
  for (const auto& [id, ack] : acked) {
    ParsedReply r;
    parse_reply(send_request(server.port(), "<transactions id=\"" + ack.account +
                                                "\"><query id=\"" + std::to_string(id) +
                                                "\"/></transactions>"),
                r);
    REQUIRE(r.items.size() == 1);
    INFO("order " << id);
    CHECK(std::string(r.items[0].name()) == "status");
    if (ack.canceled) CHECK(r.items[0].child("canceled"));
    ++checked;
  }
  CHECK(checked == static_cast<int>(acked.size()));

  // Fills survived too: every stored execution refers to stored orders on both sides, and the
  // executed shares of each order never exceed what it asked for.
  CHECK(query_value("SELECT count(*) FROM orders o WHERE abs(o.amount) - o.open_amount <> "
                    "coalesce((SELECT sum(shares) FROM executions e WHERE e.buy_order = o.id "
                    "OR e.sell_order = o.id), 0)") == "0");

  long long max_acked = acked.rbegin()->first;
  ParsedReply fresh;
  parse_reply(send_request(server.port(),
                           "<transactions id=\"70\"><order sym=\"R\" amount=\"1\" "
                           "limit=\"1\"/></transactions>"),
              fresh);
  REQUIRE(std::string(fresh.items.at(0).name()) == "opened");
  CHECK(std::stoll(fresh.items[0].attribute("id").value()) > max_acked);
  CHECK(server.stop() == 0);
}
