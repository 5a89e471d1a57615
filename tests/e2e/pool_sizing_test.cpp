// The self-sizing pools (fotp, adaptive) under a burst of slow requests: the pool grows, never
// past --max-threads, and shrinks back once the load stops. Read from the --metrics CSV; the
// only deadlines are generous polling limits.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "support/server_process.hpp"
#include "support/wire_client.hpp"

using namespace testing_support;

namespace {

constexpr int kClients = 32;
constexpr unsigned kMaxThreads = 16;

struct Row {
  long time = 0;
  long threads = -1;
  long target = -1;
};

// Column indexes of the CSV header the server writes.
struct Columns {
  int time = -1, threads = -1, target = -1;
};

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) out.push_back(field);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

std::vector<Row> read_metrics(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::vector<Row> rows;
  if (!std::getline(in, line)) return rows;
  Columns col;
  auto header = split(line);
  for (int i = 0; i < static_cast<int>(header.size()); ++i) {
    if (header[i] == "time") col.time = i;
    if (header[i] == "threads") col.threads = i;
    if (header[i] == "target_threads") col.target = i;
  }
  REQUIRE(col.time >= 0);
  REQUIRE(col.threads >= 0);
  while (std::getline(in, line)) {
    auto f = split(line);
    if (static_cast<int>(f.size()) != static_cast<int>(header.size())) continue;  // half-written
    Row r;
    r.time = std::stol(f[col.time]);
    if (!f[col.threads].empty()) r.threads = std::stol(f[col.threads]);
    if (col.target >= 0 && !f[col.target].empty()) r.target = std::stol(f[col.target]);
    rows.push_back(r);
  }
  return rows;
}

long unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Two children (orders for an account that does not exist): 2 x 50 ms of simulated I/O each,
// and no database work.
const std::string kSlowRequest =
    "<transactions id=\"987654321\"><order sym=\"SLOW\" amount=\"1\" limit=\"1\"/>"
    "<order sym=\"SLOW\" amount=\"-1\" limit=\"1\"/></transactions>";

}  // namespace

TEST_CASE("self-sizing pools grow under slow concurrent requests and shrink afterwards",
          "[pool-sizing]") {
  auto model = GENERATE(as<std::string>{}, "fotp", "adaptive");
  INFO("model " << model);
  std::string metrics =
      "/tmp/exchange-pool-sizing-" + std::to_string(::getpid()) + "-" + model + ".csv";
  ServerProcess server({"--concurrency", model, "--metrics", metrics, "--simulated-io-ms-per-child",
                        "50", "--min-threads", "1", "--max-threads", std::to_string(kMaxThreads),
                        "--log-level", "debug", "--reset"});

  // ~3 s of load from 32 clients: half on persistent sessions, half one connection a request.
  std::atomic<int> replies{0}, failures{0};
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      try {
        std::unique_ptr<Session> session;
        if (c % 2 == 0) session = std::make_unique<Session>(server.port());
        while (std::chrono::steady_clock::now() < until) {
          std::string reply =
              session ? session->request(kSlowRequest) : send_request(server.port(), kSlowRequest);
          if (reply.find("<results>") != std::string::npos)
            ++replies;
          else
            ++failures;
        }
      } catch (const std::exception&) {
        ++failures;
      }
    });
  }
  for (auto& t : clients) t.join();
  const long load_end = unix_now();
  CHECK(failures == 0);
  CHECK(replies > kClients);

  // Shrinks back: a row written at least a second after the load with few threads.
  const unsigned floor = std::min(kMaxThreads, std::max(1u, std::thread::hardware_concurrency()));
  const long shrunk_bound = std::max(4L, static_cast<long>(model == "adaptive" ? floor : 1));
  bool shrunk = false;
  std::vector<Row> rows;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!shrunk && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    rows = read_metrics(metrics);
    for (const Row& r : rows)
      if (r.time > load_end && r.threads >= 0 && r.threads <= shrunk_bound) shrunk = true;
  }
  CHECK(server.stop() == 0);
  rows = read_metrics(metrics);

  long max_threads = 0, max_target = 0;
  std::string seen;
  for (const Row& r : rows) {
    max_threads = std::max(max_threads, r.threads);
    max_target = std::max(max_target, r.target);
    seen += " " + std::to_string(r.threads) + "/" + std::to_string(r.target);
  }
  INFO("threads/target per second:" << seen);
  CHECK(rows.size() >= 3);
  CHECK(max_threads >= 4);  // grew
  CHECK(max_threads <= static_cast<long>(kMaxThreads));
  CHECK(max_target <= static_cast<long>(kMaxThreads));
  CHECK(shrunk);
  if (!shrunk) UNSCOPED_INFO(server.log());
  std::remove(metrics.c_str());
}
