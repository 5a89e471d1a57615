#include "support/random_traders.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>

#include "support/reply_xml.hpp"
#include "support/wire_client.hpp"

namespace testing_support {

RandomTraders::RandomTraders(unsigned short port, int clients, int first_account, int accounts,
                             std::string symbol, unsigned seed)
    : port_(port), first_account_(first_account), accounts_(accounts), symbol_(std::move(symbol)) {
  for (int c = 0; c < clients; ++c) threads_.emplace_back([this, c, seed] { trade(c, seed + c); });
}

RandomTraders::~RandomTraders() { stop(); }

std::map<long long, Acknowledged> RandomTraders::stop() {
  stopping_ = true;
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  std::lock_guard<std::mutex> lock(mutex_);
  return acked_;
}

int RandomTraders::acknowledged() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(acked_.size());
}

void RandomTraders::trade(int client, unsigned seed) {
  std::mt19937 rng(seed);
  std::string account = std::to_string(first_account_ + client % accounts_);
  std::vector<long long> mine;
  while (!stopping_) {
    bool cancel = !mine.empty() && rng() % 3 == 0;
    long long target = cancel ? mine[rng() % mine.size()] : 0;
    std::string xml = "<transactions id=\"" + account + "\">";
    if (cancel)
      xml += "<cancel id=\"" + std::to_string(target) + "\"/>";
    else
      xml += "<order sym=\"" + symbol_ + "\" amount=\"" + (rng() % 2 ? "-" : "") +
             std::to_string(1 + rng() % 20) + "\" limit=\"" + std::to_string(95 + rng() % 10) +
             "\"/>";
    xml += "</transactions>";
    ParsedReply r;
    try {
      parse_reply(send_request(port_, xml), r);
    } catch (const std::exception&) {
      // Refused or cut off (the server is down or stopping): nothing was acknowledged.
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    if (r.items.empty()) continue;
    std::string name = r.items[0].name();
    std::string text = r.items[0].text().get();
    // The whole request refused because its commit failed or the database is away.
    if (name == "error" &&
        (text.rfind("Internal error", 0) == 0 || text.rfind("Service unavailable", 0) == 0)) {
      ++error_replies_;
      continue;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (name == "opened") {
      long long id = std::stoll(r.items[0].attribute("id").value());
      mine.push_back(id);
      acked_[id] = {account, false};
    } else if (name == "canceled") {
      acked_[target].canceled = true;
    }
  }
}

void create_traders(unsigned short port, int first_account, int accounts,
                    const std::string& symbol) {
  std::string xml = "<create>";
  for (int a = 0; a < accounts; ++a)
    xml += "<account id=\"" + std::to_string(first_account + a) + "\" balance=\"1000000\"/>";
  xml += "<symbol sym=\"" + symbol + "\">";
  for (int a = 0; a < accounts; ++a)
    xml += "<account id=\"" + std::to_string(first_account + a) + "\">100000</account>";
  xml += "</symbol></create>";
  ParsedReply r;
  parse_reply(send_request(port, xml), r);
  for (auto item : r.items)
    if (std::string(item.name()) != "created") throw std::runtime_error("setup failed");
}

namespace {

// Whether `item` is the <status> an acknowledged order must have.
bool found(const pugi::xml_node& item, const Acknowledged& ack) {
  return std::string(item.name()) == "status" && (!ack.canceled || item.child("canceled"));
}

// One request querying `ids` of `account`: the ids whose <status> is missing or wrong, or
// nullopt when the reply is not one item per query (over the reply budget: asked one by one).
std::optional<std::vector<long long>> missing_among(
    unsigned short port, const std::string& account, const std::vector<long long>& ids,
    const std::map<long long, Acknowledged>& acked) {
  std::string xml = "<transactions id=\"" + account + "\">";
  for (long long id : ids) xml += "<query id=\"" + std::to_string(id) + "\"/>";
  ParsedReply r;
  parse_reply(send_request(port, xml + "</transactions>"), r);
  if (r.items.size() != ids.size()) return std::nullopt;
  std::vector<long long> missing;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (std::string(r.items[i].name()) == "error" &&
        std::string(r.items[i].text().get()).find("reply") != std::string::npos)
      return std::nullopt;
    if (!found(r.items[i], acked.at(ids[i]))) missing.push_back(ids[i]);
  }
  return missing;
}

}  // namespace

std::vector<long long> missing_orders(unsigned short port,
                                      const std::map<long long, Acknowledged>& acked) {
  // Twenty queries a request: each request is one read, and each read waits for a commit.
  constexpr std::size_t kPerRequest = 20;
  std::map<std::string, std::vector<long long>> by_account;
  for (const auto& [id, ack] : acked) by_account[ack.account].push_back(id);
  std::vector<long long> missing;
  for (const auto& [account, ids] : by_account) {
    for (std::size_t at = 0; at < ids.size(); at += kPerRequest) {
      const std::vector<long long> chunk(
          ids.begin() + static_cast<std::ptrdiff_t>(at),
          ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), at + kPerRequest)));
      auto lost = missing_among(port, account, chunk, acked);
      if (!lost) {
        lost.emplace();
        for (long long id : chunk)
          if (missing_among(port, account, {id}, acked) != std::vector<long long>{})
            lost->push_back(id);
      }
      missing.insert(missing.end(), lost->begin(), lost->end());
    }
  }
  std::sort(missing.begin(), missing.end());
  return missing;
}

}  // namespace testing_support
