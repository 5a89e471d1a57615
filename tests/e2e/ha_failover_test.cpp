// Failover of PostgreSQL under load, on a real HA stack: scripts/ha-cluster.sh starts etcd and
// two Patroni-managed PostgreSQL 15 nodes in synchronous mode, the server trades against the
// multi-host URL, and the leader's postmaster is killed with SIGKILL. Patroni promotes the
// synchronous standby; the same server process must reconnect to it by itself, and nothing it
// acknowledged (orders, fills, cancels) may be missing there.
//
// The test brings its own cluster (private directory under /tmp and private ports), so it needs
// only EXCHANGE_SERVER_BIN; it skips (77) only when Patroni/etcd cannot be installed or run.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <pqxx/pqxx>

#include "support/admin_scrape.hpp"
#include "support/checks.hpp"
#include "support/environment.hpp"
#include "support/random_traders.hpp"
#include "support/reply_xml.hpp"
#include "support/server_process.hpp"
#include "support/test_database.hpp"
#include "support/wire_client.hpp"

using namespace testing_support;
using Clock = std::chrono::steady_clock;

namespace {

// scripts/ha-cluster.sh of this checkout: ctest runs from the build tree, so it is found from
// this file's own path (CMake compiles with absolute paths); an environment variable wins.
std::string cluster_script() {
  std::string s = env_or_empty("EXCHANGE_HA_CLUSTER_SCRIPT");
  if (!s.empty()) return s;
  std::string self = __FILE__;
  auto at = self.rfind("/tests/e2e/");
  return (at == std::string::npos ? std::string(".") : self.substr(0, at)) +
         "/scripts/ha-cluster.sh";
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The cluster for one test run: up in the constructor, destroyed (every process stopped, the
// directory deleted) in the destructor, so a failing REQUIRE still tears it down. Directory and
// ports depend on the pid, so two runs on one machine do not collide.
class HaCluster {
 public:
  HaCluster()
      : dir_("/tmp/exchange-ha-test-" + std::to_string(::getpid())),
        base_(26100 + static_cast<int>(::getpid() % 20) * 30),
        log_(dir_ + ".log") {}
  ~HaCluster() {
    run("destroy");
    std::remove(log_.c_str());
  }
  HaCluster(const HaCluster&) = delete;
  HaCluster& operator=(const HaCluster&) = delete;

  // Runs `up`; returns the exit status (77: Patroni/etcd cannot be installed or run here).
  int up(std::string& url) {
    std::string out;
    int status = run("up", &out);
    // The URL is the last line of stdout.
    while (!out.empty() && out.back() == '\n') out.pop_back();
    url = out.substr(out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1);
    return status;
  }
  // SIGKILLs the leader's postmaster; returns the node that was leader.
  std::string kill_leader() {
    std::string out;
    if (run("kill-leader", &out) != 0) throw std::runtime_error("kill-leader failed:\n" + log());
    return out.substr(0, out.find('\n'));
  }
  std::string status() {
    std::string out;
    run("status", &out);
    return out;
  }
  std::string log() const { return read_file(log_); }

 private:
  int run(const std::string& command, std::string* out = nullptr) {
    std::string cmd = shell_quote(cluster_script()) + " " + command + " --ports " +
                      std::to_string(base_) + " " + shell_quote(dir_) + " 2>>" + shell_quote(log_);
    FILE* pipe = ::popen(cmd.c_str(), "r");
    if (!pipe) return -1;
    char buf[512];
    std::string text;
    while (std::fgets(buf, sizeof buf, pipe)) text += buf;
    int status = ::pclose(pipe);
    if (out) *out = text;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  }

  std::string dir_;
  int base_;
  std::string log_;
};

// EXCHANGE_TEST_DATABASE_URL is what ServerProcess passes as --db and what the SQL helpers
// connect to: for this test it is the cluster's multi-host URL, restored afterwards.
class DatabaseUrlOverride {
 public:
  explicit DatabaseUrlOverride(const std::string& url) : old_(env_or_empty(kName)) {
    ::setenv(kName, url.c_str(), 1);
  }
  ~DatabaseUrlOverride() {
    if (old_.empty())
      ::unsetenv(kName);
    else
      ::setenv(kName, old_.c_str(), 1);
  }

 private:
  static constexpr const char* kName = "EXCHANGE_TEST_DATABASE_URL";
  std::string old_;
};

// Watches the traders' acknowledgement count and remembers when it moved: the longest stretch
// without a new acknowledgement is the unavailability window the clients saw.
class AckMonitor {
 public:
  explicit AckMonitor(const RandomTraders& traders)
      : thread_([this, &traders] {
          int last = traders.acknowledged();
          while (!stop_) {
            int now = traders.acknowledged();
            if (now != last) {
              std::lock_guard<std::mutex> lock(mutex_);
              moves_.push_back(Clock::now());
              last = now;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
          }
        }) {}
  ~AckMonitor() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  long long longest_gap_ms_since(Clock::time_point from) {
    std::lock_guard<std::mutex> lock(mutex_);
    long long gap = 0;
    auto prev = from;
    for (auto t : moves_) {
      if (t < from) continue;
      gap = std::max<long long>(
          gap, std::chrono::duration_cast<std::chrono::milliseconds>(t - prev).count());
      prev = t;
    }
    return gap;
  }

 private:
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::vector<Clock::time_point> moves_;
  std::thread thread_;
};

// What a status query shows of an order: shares executed so far, and whether it is canceled.
struct Seen {
  double executed = 0;
  bool canceled = false;
  bool found = false;
};

Seen status_of(unsigned short port, long long id, const std::string& account) {
  ParsedReply r;
  parse_reply(send_request(port, "<transactions id=\"" + account + "\"><query id=\"" +
                                     std::to_string(id) + "\"/></transactions>"),
              r);
  Seen s;
  if (r.items.size() != 1 || std::string(r.items[0].name()) != "status") return s;
  s.found = true;
  for (auto e : r.items[0].children("executed")) s.executed += e.attribute("shares").as_double();
  s.canceled = static_cast<bool>(r.items[0].child("canceled"));
  return s;
}

std::string id_array(const std::map<long long, Acknowledged>& acked, bool canceled_only) {
  std::string out = "'{";
  for (const auto& [id, ack] : acked) {
    if (canceled_only && !ack.canceled) continue;
    if (out.size() > 2) out += ',';
    out += std::to_string(id);
  }
  return out + "}'::bigint[]";
}

// libpq's multi-host failover is not seamless while a node restarts: a node that accepts the
// connection and then closes it mid-handshake fails the whole attempt instead of moving on to the
// next host. The server retries on its own; the test's SQL checks retry too.
template <typename F>
auto with_retry(F f) -> decltype(f()) {
  for (int attempt = 1;; ++attempt) {
    try {
      return f();
    } catch (const pqxx::broken_connection&) {
      if (attempt >= 40) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }
}

std::string sql(const std::string& query) {
  return with_retry([&] { return query_value(query); });
}

// The same without waiting for the projection first (while the traders run).
std::string sql_now(const std::string& query) {
  return with_retry([&] { return query_value_now(query); });
}

// A cluster for one test case, or exit 77 (skipped) when Patroni/etcd cannot be installed or
// run here, or when there is no server binary to test.
std::unique_ptr<HaCluster> cluster_or_skip(std::string& url) {
  if (env_or_empty("EXCHANGE_SERVER_BIN").empty()) {
    WARN("SKIPPED: EXCHANGE_SERVER_BIN is not set (./test.sh sets it)");
    std::exit(77);
  }
  auto cluster = std::make_unique<HaCluster>();
  const int up_status = cluster->up(url);
  if (up_status == 77) {
    // std::exit skips destructors: tear down (nothing should be running) before skipping.
    std::cerr << cluster->log();
    cluster.reset();
    WARN("SKIPPED: Patroni/etcd cannot be installed or run here (ha-cluster.sh's reason above)");
    std::exit(77);
  }
  REQUIRE(up_status == 0);
  REQUIRE(url.rfind("postgresql://", 0) == 0);
  return cluster;
}

}  // namespace

TEST_CASE("SIGKILL of the PostgreSQL leader under load loses nothing acknowledged", "[e2e][ha]") {
  const auto test_started = Clock::now();
  std::string url;
  auto cluster = cluster_or_skip(url);
  INFO("ha-cluster.sh log:\n" << cluster->log());
  const auto cluster_up = Clock::now();
  DatabaseUrlOverride use_cluster(url);

  const std::string old_primary_port = sql("SELECT inet_server_port()");
  const unsigned short admin = free_port();
  // --db-timeout-ms 3000: a failover is detected by broken connections (the killed postmaster's
  // backends exit), not by timeouts, but a bounded wait keeps a half-dead node from stalling
  // the reconnect.
  ServerProcess server({"--concurrency", "pool", "--reset", "--db-timeout-ms", "3000",
                        "--admin-port", std::to_string(admin)});
  create_traders(server.port(), 100, 6, "HA");

  // Phase 1: trade, stop, and remember what status queries show of every acknowledged order:
  // those replies are acknowledged state too (fills included), so after the failover every
  // order must show at least these fills and stay canceled if it was.
  std::map<long long, Acknowledged> before_kill;
  {
    RandomTraders warmup(server.port(), 6, 100, 6, "HA", 17);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    before_kill = warmup.stop();
  }
  REQUIRE(before_kill.size() > 20);
  std::map<long long, Seen> seen_before;
  for (const auto& [id, ack] : before_kill)
    seen_before[id] = status_of(server.port(), id, ack.account);
  double fills_seen = 0;
  for (const auto& [id, s] : seen_before) fills_seen += s.executed;
  REQUIRE(fills_seen > 0);  // the check below is about something

  // Phase 2: trade, kill the leader's postmaster mid-stream, keep trading through the failover.
  RandomTraders traders(server.port(), 8, 100, 6, "HA", 4242);
  AckMonitor monitor(traders);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  const int acked_before_kill = traders.acknowledged();
  REQUIRE(acked_before_kill > 0);
  const auto killed_at = Clock::now();
  const std::string killed = cluster->kill_leader();
  INFO("killed the postmaster of " << killed);

  // /healthz meanwhile: 503 while no writable primary answers (for more than 3 s), 200 after.
  std::atomic<bool> health_stop{false};
  std::atomic<int> health_503{0};
  std::thread health([&] {
    while (!health_stop) {
      try {
        std::string raw =
            send_raw(admin, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        if (raw.rfind("HTTP/1.1 503", 0) == 0) ++health_503;
      } catch (const std::exception&) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });

  // Serving again on its own, through the promoted standby: acknowledgements resume.
  const int after_kill = traders.acknowledged();
  for (int wait = 0; wait < 600 && traders.acknowledged() < after_kill + 100; ++wait)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto resumed = Clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto acked = traders.stop();
  monitor.stop();
  health_stop = true;
  health.join();
  const long long window_ms = monitor.longest_gap_ms_since(killed_at);
  const std::string log = server.log();
  INFO("acknowledged before the kill "
       << acked_before_kill << ", in all " << acked.size() << "; error replies "
       << traders.error_replies() << "; longest stretch without an acknowledgement " << window_ms
       << " ms; /healthz 503 seen " << health_503.load() << " times\ncluster:\n"
       << cluster->status() << "\nserver log:\n"
       << log);
  CHECK(static_cast<int>(acked.size()) >= after_kill + 100);
  // Bounded: Patroni's ttl is 10 s and the failover itself takes a few seconds.
  CHECK(window_ms < 30000);

  // Patroni brings the killed node back (rewound) as the new synchronous standby.
  bool rejoined = false;
  for (int wait = 0; wait < 120 && !rejoined; ++wait) {
    std::istringstream table(cluster->status());
    for (std::string line; std::getline(table, line);)
      if (line.find(killed) != std::string::npos && line.find("Sync Standby") != std::string::npos)
        rejoined = true;
    if (!rejoined) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  CHECK(rejoined);

  // The new primary is the former standby, and it is writable.
  const std::string new_primary_port = sql("SELECT inet_server_port()");
  CHECK(new_primary_port != old_primary_port);
  CHECK(sql("SELECT pg_is_in_recovery()") == "f");

  // Every acknowledged order, through the protocol (the server reloaded from the new primary)...
  for (const auto& [id, ack] : acked) {
    auto& all = before_kill[id];
    all.account = ack.account;
    all.canceled = all.canceled || ack.canceled;
  }
  CHECK(missing_orders(server.port(), before_kill).empty());
  // ... every fill and cancel seen before the kill ...
  int fills_lost = 0, cancels_lost = 0;
  for (const auto& [id, s] : seen_before) {
    Seen now = status_of(server.port(), id, before_kill[id].account);
    if (now.executed + 1e-9 < s.executed) ++fills_lost;
    if (s.canceled && !now.canceled) ++cancels_lost;
  }
  CHECK(fills_lost == 0);
  CHECK(cancels_lost == 0);
  // ... and in SQL on the new primary: every acknowledged order stored, every acknowledged cancel
  // stored, the fills consistent with the orders, the conservation rules.
  CHECK(sql("SELECT count(*) FROM orders WHERE id = ANY(" + id_array(before_kill, false) + ")") ==
        std::to_string(before_kill.size()));
  std::size_t canceled = 0;
  for (const auto& [id, ack] : before_kill) canceled += ack.canceled ? 1 : 0;
  CHECK(sql("SELECT count(*) FROM orders WHERE canceled_at IS NOT NULL AND id = ANY(" +
            id_array(before_kill, true) + ")") == std::to_string(canceled));
  CHECK(sql(kFillsMatchOrders) == "0");
  auto violations = with_retry([] { return conservation_violations(); });
  for (const auto& v : violations) UNSCOPED_INFO(v);
  CHECK(violations.empty());

  // New ids are new, and the server is healthy again.
  ParsedReply fresh;
  parse_reply(send_request(server.port(),
                           "<transactions id=\"100\"><order sym=\"HA\" "
                           "amount=\"1\" limit=\"1\"/></transactions>"),
              fresh);
  REQUIRE(std::string(fresh.items.at(0).name()) == "opened");
  CHECK(std::stoll(fresh.items[0].attribute("id").value()) > before_kill.rbegin()->first);
  std::string healthz =
      send_raw(admin, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  CHECK(healthz.rfind("HTTP/1.1 200", 0) == 0);

  // The same process rode it out: it is still running and drains cleanly.
  CHECK(server.stop() == 0);
  auto secs = [](Clock::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count() / 1000.0;
  };
  std::cerr << "ha_failover: cluster up in " << secs(cluster_up - test_started) << " s; killed "
            << killed << "; 100 acknowledgements after the kill within "
            << secs(resumed - killed_at) << " s; longest stretch without an acknowledgement "
            << window_ms << " ms; " << acked.size() << " orders acknowledged around the kill, "
            << traders.error_replies() << " refused with an error; /healthz 503 seen "
            << health_503.load() << " times\n";
}

// Issue 27 beside issue 14: a hot standby exchange follows the active one through the same
// multi-host URL. The database fails over first: both exchange servers lose every session, the
// active one takes its writer lock back on the new primary (the standby holds back while the
// active server's lease runs) and keeps serving, and the standby follows the journal there.
// Then the active exchange server is killed: the standby takes over on the new primary with
// everything acknowledged through both failovers.
TEST_CASE(
    "a standby exchange beside Patroni: the database and the exchange fail over independently",
    "[e2e][ha]") {
  std::string url;
  auto cluster = cluster_or_skip(url);
  INFO("ha-cluster.sh log:\n" << cluster->log());
  DatabaseUrlOverride use_cluster(url);
  // A lease longer than a database failover (Patroni's ttl is 10 s): the active server's lease
  // outlives the database's outage, so the database failing over is not an exchange failover.
  const std::vector<std::string> common = {"--concurrency", "pool",       "--db-timeout-ms",
                                           "3000",          "--lease-ms", "20000"};
  const unsigned short a_admin = free_port(), b_admin = free_port();
  std::vector<std::string> a_flags = common, b_flags = common;
  a_flags.insert(a_flags.end(), {"--reset", "--admin-port", std::to_string(a_admin)});
  b_flags.insert(b_flags.end(), {"--standby", "--admin-port", std::to_string(b_admin)});
  ServerProcess a(a_flags);
  create_traders(a.port(), 300, 6, "HS");
  ServerProcess b(b_flags, ServerProcess::Start::Launched);
  auto following = [&] {
    try {
      auto h = http_get(b_admin, "/healthz");
      return h.status == 503 && contains(h.body, "standby: following");
    } catch (const std::exception&) {
      return false;
    }
  };
  REQUIRE(wait_until(following, std::chrono::seconds(60), std::chrono::milliseconds(50)));

  RandomTraders traders(a.port(), 6, 300, 6, "HS", 2727);
  REQUIRE(wait_until([&] { return traders.acknowledged() > 50; }, std::chrono::seconds(30),
                     std::chrono::milliseconds(50)));
  const std::string old_primary_port = sql_now("SELECT inet_server_port()");
  const std::string killed = cluster->kill_leader();
  INFO("killed the postmaster of " << killed);
  const int after_kill = traders.acknowledged();
  const bool resumed = wait_until([&] { return traders.acknowledged() > after_kill + 100; },
                                  std::chrono::seconds(60), std::chrono::milliseconds(50));
  const std::string a_log = a.log(), b_log = b.log();
  INFO("the active server's log:\n"
       << a_log << "\nthe standby's log:\n"
       << b_log << "\ncluster:\n"
       << cluster->status());
  REQUIRE(resumed);
  CHECK(sql_now("SELECT inet_server_port()") != old_primary_port);
  // The exchange layer did not fail over: the same active server, the same standby.
  CHECK(scrape(a_admin, "exchange_role{role=\"active\"}") == 1);
  CHECK(scrape(b_admin, "exchange_role{role=\"standby\"}") == 1);
  CHECK_FALSE(contains(a_log, "fenced"));
  CHECK_FALSE(contains(b_log, "takeover:"));
  // Its appends were never blocked by the lock (they check the epoch), so it may serve again
  // before its keeper's next try takes the lock back: once a second.
  CHECK(wait_until([&] { return contains(a.log(), "took the writer lock again"); },
                   std::chrono::seconds(30), std::chrono::milliseconds(50)));
  // The standby follows the journal on the new primary.
  const long long committed = std::stoll(sql_now("SELECT max(seq) FROM journal"));
  CHECK(wait_until([&] { return scrape(b_admin, "exchange_journal_seq") >= committed; },
                   std::chrono::seconds(30), std::chrono::milliseconds(50)));
  CHECK(wait_until(following, std::chrono::seconds(10), std::chrono::milliseconds(50)));

  // Now the exchange fails over, on the new primary.
  a.kill();
  traders.set_port(b.port());
  const bool took_over =
      wait_until([&] { return contains(b.log(), "takeover: serving as the active server"); },
                 std::chrono::seconds(30), std::chrono::milliseconds(50));
  INFO("the standby's log after the kill:\n" << b.log());
  REQUIRE(took_over);
  const int at_takeover = traders.acknowledged();
  CHECK(wait_until([&] { return traders.acknowledged() > at_takeover + 50; },
                   std::chrono::seconds(30), std::chrono::milliseconds(50)));
  auto acked = traders.stop();
  CHECK(missing_orders(b.port(), acked).empty());
  CHECK(sql("SELECT count(*) FROM orders WHERE id = ANY(" + id_array(acked, false) + ")") ==
        std::to_string(acked.size()));
  CHECK(sql(kFillsMatchOrders) == "0");
  auto violations = with_retry([] { return conservation_violations(); });
  for (const auto& v : violations) UNSCOPED_INFO(v);
  CHECK(violations.empty());
  CHECK(b.stop() == 0);
  // Whether the race it guards against came up this time: the standby found the lock free
  // while the active server's lease ran, and left it to that server.
  const bool held_back = contains(b_log, "standby: not queueing yet");
  std::cerr << "ha_failover (standby): " << acked.size()
            << " orders acknowledged through a database failover (" << killed
            << " killed) and an exchange takeover; " << traders.error_replies()
            << " refused with an error; the standby "
            << (held_back
                    ? "held back from the free writer lock while the active server's lease ran"
                    : "found the writer lock taken back when it queued again")
            << "\n";
}
