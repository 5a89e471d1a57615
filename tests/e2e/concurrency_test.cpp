// Many clients at once on a few hot symbols, for every model; then the conservation rules of
// PROTOCOL.md section 6 checked on what PostgreSQL holds, and every acknowledged order found
// there.
#include <atomic>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "support/reply_xml.hpp"
#include "support/server_process.hpp"
#include "support/test_database.hpp"
#include "support/wire_client.hpp"

using namespace testing_support;

namespace {

constexpr int kClients = 32;
constexpr int kRequestsPerClient = 25;
constexpr int kAccounts = 12;
const char* kSymbols[] = {"HOT1", "HOT2", "HOT3"};

std::string setup_request() {
  std::string xml = "<create>";
  for (int a = 0; a < kAccounts; ++a)
    xml += "<account id=\"" + std::to_string(500 + a) + "\" balance=\"25000.50\"/>";
  for (const char* sym : kSymbols) {
    xml += "<symbol sym=\"" + std::string(sym) + "\">";
    for (int a = 0; a < kAccounts; ++a)
      xml += "<account id=\"" + std::to_string(500 + a) + "\">300</account>";
    xml += "</symbol>";
  }
  return xml + "</create>";
}

// A request of 1-4 children: random orders around 100 (fractional amounts and prices too),
// and cancels of this client's earlier orders.
std::string random_request(std::mt19937& rng, const std::vector<std::string>& mine, int account) {
  std::string xml = "<transactions id=\"" + std::to_string(500 + account) + "\">";
  int children = 1 + static_cast<int>(rng() % 4);
  for (int c = 0; c < children; ++c) {
    if (!mine.empty() && rng() % 4 == 0) {
      xml += "<cancel id=\"" + mine[rng() % mine.size()] + "\"/>";
      continue;
    }
    int amount = 1 + static_cast<int>(rng() % 40);
    bool buy = rng() % 2 == 0;
    int cents = 9500 + static_cast<int>(rng() % 1001);
    xml += "<order sym=\"" + std::string(kSymbols[rng() % 3]) + "\" amount=\"" + (buy ? "" : "-") +
           std::to_string(amount) + (rng() % 3 == 0 ? ".5" : "") + "\" limit=\"" +
           std::to_string(cents / 100) + "." + std::to_string(cents % 100 / 10) +
           std::to_string(cents % 10) + "\"/>";
  }
  return xml + "</transactions>";
}

}  // namespace

TEST_CASE("32 concurrent clients on 3 hot symbols conserve cash and shares", "[concurrency]") {
  auto model = GENERATE(from_range(models_under_test()));
  INFO("model " << model);
  ServerProcess server({"--concurrency", model, "--threads", "4", "--reset"});
  ParsedReply setup;
  parse_reply(send_request(server.port(), setup_request()), setup);
  for (auto item : setup.items) REQUIRE(std::string(item.name()) == "created");

  std::mutex mutex;
  std::set<std::string> acknowledged;
  std::atomic<int> opened{0}, canceled{0}, failures{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      std::mt19937 rng(1234 + c);
      std::vector<std::string> mine;
      int account = c % kAccounts;
      for (int i = 0; i < kRequestsPerClient; ++i) {
        try {
          ParsedReply r;
          parse_reply(send_request(server.port(), random_request(rng, mine, account)), r);
          for (auto item : r.items) {
            std::string name = item.name();
            if (name == "opened") {
              mine.push_back(item.attribute("id").value());
              ++opened;
            } else if (name == "canceled") {
              ++canceled;
            }
          }
        } catch (const std::exception&) {
          ++failures;
        }
      }
      std::lock_guard<std::mutex> lock(mutex);
      acknowledged.insert(mine.begin(), mine.end());
    });
  }
  for (auto& t : clients) t.join();

  CHECK(failures == 0);
  CHECK(opened > kClients * kRequestsPerClient / 2);
  CHECK(canceled > 0);
  auto violations = conservation_violations();
  for (const auto& v : violations) UNSCOPED_INFO(v);
  CHECK(violations.empty());
  CHECK(query_value("SELECT count(*) FROM orders") == std::to_string(acknowledged.size()));
  CHECK(query_value("SELECT count(*) FROM executions") != "0");
  CHECK(server.stop() == 0);
}
