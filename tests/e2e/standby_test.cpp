// A hot standby (exchange-server --standby, issue 27). Beside an active server under load it
// serves nothing (the standby error, /healthz 503, its role and lag on /metrics); when the
// active server is killed it takes over with everything that server acknowledged, and the
// killed one comes back as the next standby; when the active server is paused, the standby
// takes over once the lease has run out, and the old server, resumed, acknowledges and
// appends nothing more, says it stepped down and exits 4.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "support/admin_scrape.hpp"
#include "support/checks.hpp"
#include "support/random_traders.hpp"
#include "support/raw_client.hpp"
#include "support/reply_xml.hpp"
#include "support/server_process.hpp"
#include "support/test_database.hpp"
#include "support/wire_client.hpp"

using namespace testing_support;
using namespace std::chrono_literals;

namespace {

const char* const kStandbyError = "this exchange server is the standby";

// A standby on the test database with its own admin port.
struct Standby {
  unsigned short admin = free_port();
  ServerProcess process;
  explicit Standby(std::vector<std::string> more = {})
      : process(flags(admin, std::move(more)), ServerProcess::Start::Launched) {}
  static std::vector<std::string> flags(unsigned short admin, std::vector<std::string> more) {
    std::vector<std::string> f = {"--standby", "--concurrency", "pool", "--admin-port",
                                  std::to_string(admin)};
    f.insert(f.end(), more.begin(), more.end());
    return f;
  }
  // Loaded and following: /healthz says so.
  bool following(std::chrono::milliseconds at_most) {
    return wait_until(
        [&] {
          auto h = http_get(admin, "/healthz");
          return h.status == 503 && contains(h.body, "standby: following");
        },
        at_most);
  }
  bool took_over(std::chrono::milliseconds at_most) {
    return wait_until(
        [&] { return contains(process.log(), "takeover: serving as the active server"); }, at_most);
  }
};

// Creates accounts on `port` (switchable) one request at a time and remembers those the
// server acknowledged.
class AccountCreator {
 public:
  AccountCreator(unsigned short port, long long first) : port_(port), next_(first) {
    thread_ = std::thread([this] { run(); });
  }
  ~AccountCreator() { stop(); }
  void set_port(unsigned short port) { port_ = port; }
  std::set<long long> stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
    return acked_;
  }

 private:
  void run() {
    while (!stopping_) {
      const long long id = next_++;
      ParsedReply r;
      try {
        parse_reply(send_request(port_, "<create><account id=\"" + std::to_string(id) +
                                            "\" balance=\"1000\"/></create>"),
                    r);
      } catch (const std::exception&) {
        std::this_thread::sleep_for(5ms);
        continue;
      }
      if (r.items.size() == 1 && std::string(r.items[0].name()) == "created") acked_.insert(id);
    }
  }
  std::atomic<unsigned short> port_;
  long long next_;
  std::atomic<bool> stopping_{false};
  std::set<long long> acked_;
  std::thread thread_;
};

// How many of `ids` the accounts table holds (the projection, once caught up).
long long stored_accounts(const std::set<long long>& ids) {
  if (ids.empty()) return 0;
  std::string list;
  for (long long id : ids) list += (list.empty() ? "'" : ",'") + std::to_string(id) + "'";
  return std::stoll(query_value("SELECT count(*) FROM accounts WHERE id IN (" + list + ")"));
}

long long projected() { return std::stoll(query_value_now("SELECT seq FROM projection_position")); }

// What a takeover's log says it took: the journal's end, and the projection's position.
struct Handover {
  long long tail = -1, projected = -1;
};
Handover handover(const std::string& log) {
  std::smatch m;
  Handover h;
  if (std::regex_search(log, m,
                        std::regex("journal's tail \\([0-9]+ entries, to seq ([0-9]+)\\) in [^;]*; "
                                   "the projection is at seq ([0-9]+)"))) {
    h.tail = std::stoll(m[1]);
    h.projected = std::stoll(m[2]);
  }
  return h;
}

}  // namespace

TEST_CASE("a standby serves nothing, follows the journal and takes over at a kill -9", "[e2e]") {
  // Every projection write is held back, so at each kill the tables lag the journal and the
  // new leader's projector must write what the old one never did.
  ServerProcess a({"--concurrency", "pool", "--reset", "--projector-delay-ms", "300"});
  create_traders(a.port(), 900, 6, "SBA");
  Standby b({"--projector-delay-ms", "300"});
  REQUIRE(b.following(30s));
  INFO("the standby's log:\n" << b.process.log());

  // While standby: the trading port answers with the standby error and applies nothing.
  const std::string refused = send_request(
      b.process.port(),
      "<transactions id=\"900\"><order sym=\"SBA\" amount=\"1\" limit=\"1\"/></transactions>");
  CHECK(contains(refused, kStandbyError));
  CHECK(contains(refused, "Service unavailable"));
  CHECK_FALSE(contains(refused, "<opened"));
  const std::string metrics = http_get(b.admin, "/metrics").body;
  CHECK(series(metrics, "exchange_role{role=\"standby\"}") == 1);
  CHECK(series(metrics, "exchange_role{role=\"active\"}") == 0);
  CHECK(series(metrics, "exchange_standby_lag_entries") >= 0);
  CHECK(series(metrics, "exchange_standby_lag_seconds") >= 0);

  RandomTraders traders(a.port(), 3, 900, 6, "SBA", 51);
  AccountCreator accounts(a.port(), 5000000);
  REQUIRE(wait_until([&] { return traders.acknowledged() > 40; }, 20s));
  // It follows: its applied seq reaches what the active server had committed.
  const long long committed = std::stoll(query_value_now("SELECT max(seq) FROM journal"));
  CHECK(wait_until([&] { return scrape(b.admin, "exchange_journal_seq") >= committed; }, 10s));
  // Killed once its projection has written something (so the standby must hand over a part
  // of what it replayed, not all of it).
  CHECK(wait_until([&] { return projected() > 0; }, 20s));

  a.kill();
  traders.set_port(b.process.port());
  accounts.set_port(b.process.port());
  const bool took_over = b.took_over(20s);
  const std::string b_log = b.process.log();
  INFO("the standby's log:\n" << b_log);
  REQUIRE(took_over);
  const int at_takeover = traders.acknowledged();
  CHECK(wait_until([&] { return traders.acknowledged() > at_takeover + 20; }, 20s));
  CHECK(http_get(b.admin, "/healthz").status == 200);
  CHECK(scrape(b.admin, "exchange_role{role=\"active\"}") == 1);
  const Handover first = handover(b_log);
  CHECK(first.projected > 0);
  CHECK(first.projected < first.tail);  // the new leader had some of it to project

  // The killed server comes back as the standby of the new leader.
  Standby c({"--projector-delay-ms", "300"});
  REQUIRE(c.following(30s));
  const int before_second = traders.acknowledged();
  CHECK(wait_until([&] { return traders.acknowledged() > before_second + 20; }, 20s));
  // The new leader has projected past its takeover: it wrote what the old one had not.
  CHECK(wait_until([&] { return projected() > first.tail; }, 20s));
  b.process.kill();
  traders.set_port(c.process.port());
  accounts.set_port(c.process.port());
  const bool c_took_over = c.took_over(20s);
  INFO("the second standby's log:\n" << c.process.log());
  REQUIRE(c_took_over);
  const Handover second = handover(c.process.log());
  CHECK(second.projected > first.tail);
  const int at_second = traders.acknowledged();
  CHECK(wait_until([&] { return traders.acknowledged() > at_second + 20; }, 20s));

  auto acked = traders.stop();
  auto created = accounts.stop();
  // Every order and account either server acknowledged is served by the third, and stored.
  CHECK(missing_orders(c.process.port(), acked).empty());
  CHECK(wait_for_projection());
  CHECK(stored_accounts(created) == static_cast<long long>(created.size()));
  std::string ids;
  for (const auto& [id, ack] : acked) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  CHECK(query_value("SELECT count(*) FROM orders WHERE id IN (" + ids + ")") ==
        std::to_string(acked.size()));
  // The projection reached the journal's end: nothing the killed servers left unprojected
  // was lost.
  CHECK(query_value("SELECT (SELECT seq FROM projection_position) = (SELECT max(seq) FROM "
                    "journal)") == "t");
  check_conservation();
  CHECK(c.process.stop() == 0);
}

TEST_CASE("a paused active server is replaced after its lease and, resumed, steps down", "[e2e]") {
  ServerProcess a({"--concurrency", "pool", "--reset", "--lease-ms", "1500"});
  create_traders(a.port(), 920, 6, "SPA");
  Standby b({"--lease-ms", "1500"});
  REQUIRE(b.following(30s));
  RandomTraders a_load(a.port(), 3, 920, 6, "SPA", 61);
  REQUIRE(wait_until([&] { return a_load.acknowledged() > 20; }, 20s));

  ::kill(a.pid(), SIGSTOP);
  // The lease runs out; the standby ends the paused server's lock session and takes over.
  const bool took_over = b.took_over(20s);
  std::string b_log = b.process.log();
  INFO("the standby's log:\n" << b_log);
  REQUIRE(took_over);
  CHECK(contains(b_log, "let its lease expire"));
  // Where the new leader's journal begins: everything after it is the new leader's.
  std::smatch m;
  REQUIRE(std::regex_search(b_log, m,
                            std::regex("replayed the journal's tail \\([0-9]+ entries, "
                                       "to seq ([0-9]+)\\)")));
  const std::string taken_at = m[1];
  create_traders(b.process.port(), 940, 6, "SPB");
  RandomTraders b_load(b.process.port(), 3, 940, 6, "SPB", 71);
  CHECK(wait_until([&] { return b_load.acknowledged() > 20; }, 20s));

  // Issue 47: reads that prove leadership. An order the new leader acknowledged (of an account
  // the old server never heard of) is queried on the paused old server: the
  // query is in its socket before it resumes, so it is read at once, racing its own discovery
  // that it lost the lease. It must be refused (or not answered), never answered from the old
  // state, which has no such order.
  const std::string placed = send_request(b.process.port(),
                                          "<transactions id=\"940\"><order sym=\"SPB\" "
                                          "amount=\"-1\" limit=\"1\"/></transactions>");
  std::smatch id;
  REQUIRE(std::regex_search(placed, id, std::regex("id=\"([0-9]+)\"/>")));
  const std::string query =
      "<transactions id=\"940\"><query id=\"" + id[1].str() + "\"/></transactions>";
  std::vector<std::unique_ptr<RawClient>> probes;
  for (int i = 0; i < 4; ++i) {
    probes.push_back(std::make_unique<RawClient>(a.port()));
    probes.back()->send(std::to_string(query.size()) + "\n" + query);
  }

  // Resumed, the old server may not acknowledge anything new.
  ::kill(a.pid(), SIGCONT);
  for (auto& probe : probes) {
    bool ended = false;
    const std::string reply = probe->read_to_end(10s, ended);
    INFO("the old server's answer to a query of order " << id[1] << ": " << reply);
    // Refused ("Service unavailable: ...", the step-down's or the database's) or closed.
    CHECK((reply.empty() || contains(reply, "<error>Service unavailable")));
    CHECK_FALSE(contains(reply, "<status"));
  }
  std::string late;
  try {
    late = send_request(
        a.port(),
        "<transactions id=\"920\"><order sym=\"SPA\" amount=\"1\" limit=\"1\"/></transactions>");
  } catch (const std::exception& e) {
    late = std::string("(no reply: ") + e.what() + ")";
  }
  INFO("the old server's reply after it resumed: " << late);
  CHECK_FALSE(contains(late, "<opened"));
  const auto code = a.wait_exit_for(20s);
  auto a_acked = a_load.stop();
  const std::string a_log = a.log();
  INFO("the old server's log:\n" << a_log);
  REQUIRE(code.has_value());
  CHECK(*code == 4);
  CHECK(contains(a_log, "fenced: another server took over the database"));
  CHECK(contains(a_log, "stepping down"));

  auto b_acked = b_load.stop();
  // Not one journal entry after the takeover is the old server's.
  const std::string a_rows =
      "(request LIKE '%sym=\"SPA\"%' OR request ~ '^<transactions id=\"92[0-5]\"')";
  CHECK(query_value_now("SELECT count(*) FROM journal WHERE seq > " + taken_at + " AND " +
                        a_rows) == "0");
  CHECK(query_value_now("SELECT count(*) FROM journal WHERE seq > " + taken_at) != "0");
  // Everything either acknowledged is served by the new leader.
  CHECK(missing_orders(b.process.port(), a_acked).empty());
  CHECK(missing_orders(b.process.port(), b_acked).empty());
  check_conservation();
  CHECK(b.process.stop() == 0);
}

namespace {

// The backend of a projector whose transaction has appended or updated orders or executions,
// or 0 (only the active server's projector writes).
int projector_writing(pqxx::connection& conn) {
  return pqxx::nontransaction(conn)
      .exec1(
          "SELECT coalesce(max(a.pid), 0) FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid "
          "WHERE a.application_name = 'exchange-projector' AND l.granted "
          "AND l.mode = 'RowExclusiveLock' "
          "AND l.relation IN ('orders'::regclass, 'executions'::regclass)")[0]
      .as<int>();
}

bool backend_exists(pqxx::connection& conn, int pid) {
  return pqxx::nontransaction(conn)
             .exec1("SELECT count(*) FROM pg_stat_activity WHERE pid = " + std::to_string(pid))[0]
             .as<int>() == 1;
}

}  // namespace

TEST_CASE("a leader paused in the middle of a projection write does not hold up the new leader's",
          "[e2e]") {
  // The paused server's transaction holds rows the new leader writes too (the same orders, from
  // the same journal): unless it is ended, the new leader's projection waits for as long as the
  // old one is paused, and its backpressure would at last stop every reply.
  ServerProcess a({"--concurrency", "pool", "--reset", "--lease-ms", "1500"});
  create_traders(a.port(), 960, 6, "SPW");
  Standby b({"--lease-ms", "1500"});
  REQUIRE(b.following(30s));
  RandomTraders load(a.port(), 4, 960, 6, "SPW", 81);
  REQUIRE(wait_until([&] { return load.acknowledged() > 20; }, 20s));

  // Paused while its projector's transaction holds orders or executions it wrote: stopped at
  // once when seen so, and let go again if the write ended in between.
  auto conn = connect_database();
  int paused_projector = 0;
  const auto give_up = std::chrono::steady_clock::now() + 30s;
  while (paused_projector == 0 && std::chrono::steady_clock::now() < give_up) {
    const int pid = projector_writing(conn);
    if (pid == 0) {
      std::this_thread::sleep_for(1ms);
      continue;
    }
    ::kill(a.pid(), SIGSTOP);
    std::this_thread::sleep_for(20ms);
    if (projector_writing(conn) == pid)
      paused_projector = pid;
    else
      ::kill(a.pid(), SIGCONT);
  }
  REQUIRE(paused_projector != 0);

  const bool took_over = b.took_over(20s);
  const std::string b_log = b.process.log();
  INFO("the standby's log:\n" << b_log);
  REQUIRE(took_over);
  const Handover h = handover(b_log);
  REQUIRE(h.tail > 0);
  // With the old server still paused, the new leader serves, and projects all it took over.
  create_traders(b.process.port(), 970, 6, "SPX");
  RandomTraders b_load(b.process.port(), 3, 970, 6, "SPX", 91);
  CHECK(wait_until([&] { return b_load.acknowledged() > 20; }, 20s));
  const bool caught_up = wait_until([&] { return projected() >= h.tail; }, 20s);
  INFO("the new leader's log:\n" << b.process.log());
  CHECK(caught_up);
  // The old projection write was ended at the bump, not waited for.
  CHECK(contains(b_log, "terminated them: backend pid " + std::to_string(paused_projector) +
                            " (application_name exchange-projector)"));
  CHECK_FALSE(backend_exists(conn, paused_projector));

  ::kill(a.pid(), SIGCONT);
  const auto code = a.wait_exit_for(20s);
  INFO("the old server's log:\n" << a.log());
  REQUIRE(code.has_value());
  CHECK(*code == 4);
  auto acked = load.stop();
  auto b_acked = b_load.stop();
  CHECK(missing_orders(b.process.port(), acked).empty());
  CHECK(missing_orders(b.process.port(), b_acked).empty());
  CHECK(wait_for_projection());
  check_conservation();
  CHECK(b.process.stop() == 0);
}
