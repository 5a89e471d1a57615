// Client internals: framing, sessions against in-process fake servers, reply
// judging, replica vote normalisation and workloads.
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "bench/executor.hpp"
#include "bench/options.hpp"
#include "bench/reasons.hpp"
#include "bench/replicas.hpp"
#include "bench/reply.hpp"
#include "bench/workload.hpp"
#include "fake_server.hpp"
#include "net/failover.hpp"
#include "net/framing.hpp"
#include "net/session.hpp"
#include "support/loopback.hpp"

using namespace exch;
using namespace exch::bench;

// ---------------------------------------------------------------- framing

TEST_CASE("requests get a length line", "[framing]") {
  CHECK(net::frame_request("<a/>") == "4\n<a/>");
  CHECK(net::frame_request("") == "0\n");
}

TEST_CASE("an existing length line is stripped only when it is one", "[framing]") {
  CHECK(net::strip_length_line("173\n<?xml version=\"1.0\"?><create/>") ==
        "<?xml version=\"1.0\"?><create/>");
  CHECK(net::strip_length_line("12\r\n<x/>") == "<x/>");
  CHECK(net::strip_length_line("<x/>") == "<x/>");
  CHECK(net::strip_length_line("12\nabc") == "12\nabc");
  CHECK(net::strip_length_line("12 \n<x/>") == "12 \n<x/>");
  CHECK(net::strip_length_line("\n<x/>") == "\n<x/>");
  CHECK(net::strip_length_line("12\n") == "12\n");
}

TEST_CASE("length lines parse strictly", "[framing]") {
  CHECK(net::parse_length_line("12") == std::optional<std::size_t>(12));
  CHECK(net::parse_length_line("12\r") == std::optional<std::size_t>(12));
  CHECK(net::parse_length_line("0") == std::optional<std::size_t>(0));
  CHECK_FALSE(net::parse_length_line(""));
  CHECK_FALSE(net::parse_length_line("1a"));
  CHECK_FALSE(net::parse_length_line("-1"));
  CHECK_FALSE(net::parse_length_line("EXCHANGE-SESSION 1 OK"));
  CHECK_FALSE(net::parse_length_line("1234567890123456789"));
}

TEST_CASE("host:port splitting", "[framing]") {
  std::string h;
  std::uint16_t p = 0;
  net::split_host_port("db1:5000", 12345, h, p);
  CHECK(h == "db1");
  CHECK(p == 5000);
  net::split_host_port("db2", 12345, h, p);
  CHECK(h == "db2");
  CHECK(p == 12345);
  net::split_host_port("[::1]:7", 12345, h, p);
  CHECK(h == "::1");
  CHECK(p == 7);
  CHECK_THROWS(net::split_host_port("x:99999", 1, h, p));
  CHECK_THROWS(net::split_host_port(":80", 1, h, p));
}

// ---------------------------------------------------------------- sessions

using namespace client_test;

TEST_CASE("one request per connection: reply read until EOF", "[net]") {
  std::string seen;
  {
    OneShotServer server([&](int fd) {
      std::string line = read_line(fd);
      seen = read_n(fd, std::stoul(line));
      write_str(fd, "<?xml version=\"1.0\"?><results/>");
    });
    auto ep = net::Endpoint::resolve("127.0.0.1", server.port());
    CHECK(net::request_once(ep, "<create/>", short_timeouts()) ==
          "<?xml version=\"1.0\"?><results/>");
  }
  CHECK(seen == "<create/>");
}

TEST_CASE("persistent session: hello, then framed requests and replies", "[net]") {
  std::string hello, first, second;
  OneShotServer server([&](int fd) {
    hello = read_line(fd);
    write_str(fd, "EXCHANGE-SESSION 1 OK\n");
    first = read_n(fd, std::stoul(read_line(fd)));
    write_str(fd, "9\n<results>");    // a reply of 9 bytes ...
    write_str(fd, "10\n</results>");  // ... and the next one
    second = read_n(fd, std::stoul(read_line(fd)));
    write_str(fd, "10\n<results/>");
    read_line(fd);  // until the client closes
  });
  auto ep = net::Endpoint::resolve("127.0.0.1", server.port());
  auto session = net::Session::open(ep, short_timeouts());
  CHECK(session->request("<a/>") == "<results>");
  CHECK(session->request("<bb/>") == "</results>");
  CHECK(session->request("<ccc/>") == "<results/>");
  CHECK(hello == "EXCHANGE-SESSION 1");
  CHECK(first == "<a/>");
  CHECK(second == "<bb/>");
  session.reset();
}

TEST_CASE("an old server fails the session hello fast and clearly", "[net]") {
  OneShotServer server([&](int fd) {
    read_line(fd);  // "EXCHANGE-SESSION 1" is not a length
    write_str(fd,
              "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<results><error>bad length "
              "line</error></results>\n");
  });
  auto ep = net::Endpoint::resolve("127.0.0.1", server.port());
  auto t0 = std::chrono::steady_clock::now();
  try {
    net::Session::open(ep, short_timeouts());
    FAIL("session opened against an old server");
  } catch (const net::SessionUnsupported& e) {
    std::string what = e.what();
    CHECK(what.find("server does not support persistent sessions (it answered: <?xml") == 0);
    CHECK(what.find("bad length line") != std::string::npos);
  }
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
}

TEST_CASE("a silent server times out instead of hanging", "[net]") {
  OneShotServer server([&](int fd) {
    read_line(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
  });
  auto ep = net::Endpoint::resolve("127.0.0.1", server.port());
  auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(net::request_once(ep, "<create/>", short_timeouts()), net::NetError);
  auto took = std::chrono::steady_clock::now() - t0;
  CHECK(took >= std::chrono::milliseconds(250));
  CHECK(took < std::chrono::milliseconds(700));
}

TEST_CASE("a session reply with a bad length line is an error", "[net]") {
  OneShotServer server([&](int fd) {
    read_line(fd);
    write_str(fd, "EXCHANGE-SESSION 1 OK\n");
    read_n(fd, std::stoul(read_line(fd)));
    write_str(fd, "<results/>\n");
  });
  auto ep = net::Endpoint::resolve("127.0.0.1", server.port());
  auto session = net::Session::open(ep, short_timeouts());
  CHECK_THROWS_WITH(session->request("<a/>"), Catch::Contains("bad reply length line"));
  CHECK_FALSE(session->usable());
}

TEST_CASE("a session the server closed while idle is not reused", "[net]") {
  std::string served_on_second;
  OneShotServer server(
      [&](int fd, int i) {
        read_line(fd);
        write_str(fd, "EXCHANGE-SESSION 1 OK\n");
        if (i == 0) return;  // closes: like an idle timeout
        served_on_second = read_n(fd, std::stoul(read_line(fd)));
        write_str(fd, "10\n<results/>");
        read_line(fd);
      },
      2);
  auto ep = net::Endpoint::resolve("127.0.0.1", server.port());
  net::SessionPool pool(ep, short_timeouts());
  pool.release(pool.acquire());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto session = pool.acquire();  // the idle one is stale: a new one is opened
  CHECK(pool.opened() == 2);
  CHECK(session->request("<a/>") == "<results/>");
  CHECK(served_on_second == "<a/>");
  session.reset();
}

TEST_CASE("connection refused is a NetError", "[net]") {
  std::uint16_t port;
  {
    OneShotServer server([](int) {});
    port = server.port();
    net::Connection c = net::Connection::open(net::Endpoint::resolve("127.0.0.1", port),
                                              std::chrono::milliseconds(500));
  }
  auto ep = net::Endpoint::resolve("127.0.0.1", port);
  CHECK_THROWS_WITH(net::request_once(ep, "<a/>", short_timeouts()),
                    Catch::Contains("cannot connect"));
}

// ---------------------------------------------------------------- failover

namespace {

// A port nothing listens on (a server that is down).
std::uint16_t closed_port() {
  std::uint16_t port;
  {
    OneShotServer server([](int) {});
    port = server.port();
    net::Connection c = net::Connection::open(net::Endpoint::resolve("127.0.0.1", port),
                                              std::chrono::milliseconds(500));
  }
  return port;
}

std::vector<std::unique_ptr<net::Endpoint>> servers(std::vector<std::uint16_t> ports) {
  std::string list;
  for (auto p : ports)
    list += (list.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(p);
  return net::resolve_servers(list, 12345);
}

net::Failover::Options failover_options(bool persistent = false) {
  net::Failover::Options o;
  o.connect = short_timeouts();
  o.persistent = persistent;
  o.wait = std::chrono::milliseconds(500);
  return o;
}

const std::string kServed =
    "<?xml version=\"1.0\"?>\n<results>\n  <created id=\"1\"/>\n</results>\n";
const std::string kStandby =
    "<?xml version=\"1.0\"?>\n<results><error>Service unavailable: this server is a standby; "
    "nothing was applied</error></results>\n";

}  // namespace

TEST_CASE("servers lists parse strictly", "[failover]") {
  CHECK(net::resolve_servers("127.0.0.1:1,127.0.0.1:2", 9).size() == 2);
  CHECK(net::resolve_servers("127.0.0.1", 9).front()->port() == 9);
  CHECK_THROWS_AS(net::resolve_servers("127.0.0.1:1,,127.0.0.1:2", 9), std::invalid_argument);
  CHECK_THROWS_AS(net::resolve_servers("", 9), std::invalid_argument);
  CHECK(net::refused_as_not_serving(kStandby));
  CHECK_FALSE(net::refused_as_not_serving(kServed));
  // An item's error is not a refusal of the whole request.
  CHECK_FALSE(net::refused_as_not_serving(
      "<results>\n  <error id=\"1\">Service unavailable</error>\n</results>"));
}

TEST_CASE("failover: a server that is down is passed over", "[failover]") {
  std::string seen;
  OneShotServer up([&](int fd) {
    seen = read_n(fd, std::stoul(read_line(fd)));
    write_str(fd, kServed);
  });
  net::Failover f(servers({closed_port(), up.port()}), failover_options());
  std::vector<std::string> notes;
  f.on_switch([&](const std::string& n) { notes.push_back(n); });
  auto a = f.request("<create/>");
  REQUIRE(a.kind == net::Failover::Answer::Kind::Reply);
  CHECK(a.reply == kServed);
  CHECK(a.server->port() == up.port());
  CHECK(seen == "<create/>");
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Catch::Contains("cannot connect"));
}

TEST_CASE("failover: a standby's refusal sends the request on, nothing applied there",
          "[failover]") {
  std::string at_standby, at_active;
  OneShotServer standby([&](int fd) {
    at_standby = read_n(fd, std::stoul(read_line(fd)));
    write_str(fd, kStandby);
  });
  OneShotServer active([&](int fd) {
    at_active = read_n(fd, std::stoul(read_line(fd)));
    write_str(fd, kServed);
  });
  net::Failover f(servers({standby.port(), active.port()}), failover_options());
  auto a = f.request("<create/>");
  REQUIRE(a.kind == net::Failover::Answer::Kind::Reply);
  CHECK(a.reply == kServed);
  CHECK(at_standby == "<create/>");
  CHECK(at_active == "<create/>");
}

TEST_CASE("failover: a request sent without a reply is unknown and never resent", "[failover]") {
  std::atomic<int> second_connections{0};
  OneShotServer dies([&](int fd) {
    read_n(fd, std::stoul(read_line(fd)));  // takes it whole, then closes: a crash
  });
  OneShotServer other(
      [&](int fd, int) {
        ++second_connections;
        read_n(fd, std::stoul(read_line(fd)));
        write_str(fd, kServed);
      },
      1);
  net::Failover f(servers({dies.port(), other.port()}), failover_options());
  auto a = f.request(
      "<transactions id=\"1\"><order sym=\"X\" amount=\"1\" limit=\"1\"/></transactions>");
  CHECK(a.kind == net::Failover::Answer::Kind::Unknown);
  CHECK(a.server->port() == dies.port());
  CHECK(second_connections == 0);  // not resent
  // The next request goes to the next server.
  auto b = f.request("<create/>");
  REQUIRE(b.kind == net::Failover::Answer::Kind::Reply);
  CHECK(b.server->port() == other.port());
}

TEST_CASE("failover: persistent sessions move to the server that serves", "[failover]") {
  std::string got;
  OneShotServer active([&](int fd) {
    read_line(fd);
    write_str(fd, "EXCHANGE-SESSION 1 OK\n");
    got = read_n(fd, std::stoul(read_line(fd)));
    write_str(fd, std::to_string(kServed.size()) + "\n" + kServed);
    read_line(fd);  // until the client closes
  });
  net::Failover f(servers({closed_port(), active.port()}), failover_options(true));
  auto a = f.request("<create/>");
  REQUIRE(a.kind == net::Failover::Answer::Kind::Reply);
  CHECK(a.reply == kServed);
  CHECK(got == "<create/>");
}

TEST_CASE("failover: no server serving within the wait is unreachable", "[failover]") {
  net::Failover f(servers({closed_port(), closed_port()}), failover_options());
  auto a = f.request("<create/>");
  CHECK(a.kind == net::Failover::Answer::Kind::Unreachable);
  CHECK_THAT(a.error, Catch::Contains("cannot connect"));
}

// ---------------------------------------------------------------- replies

TEST_CASE("tiny XML reader", "[reply]") {
  auto n = parse_xml(
      "<?xml version=\"1.0\"?>\n<!-- c -->\n<results>\n <error id='1'>a &amp; b</error>\n"
      " <status id=\"2\"><open shares=\"5\"/></status>\n</results>\n");
  REQUIRE(n);
  CHECK(n->name == "results");
  REQUIRE(n->children.size() == 2);
  CHECK(*n->children[0].attr("id") == "1");
  CHECK(n->children[0].text == "a & b");
  CHECK(n->children[1].children[0].name == "open");
  CHECK_FALSE(parse_xml("<results><a></b></results>"));
  CHECK_FALSE(parse_xml("<results>"));
  CHECK_FALSE(parse_xml("<results/><x/>"));
}

TEST_CASE("replies are judged positionally", "[reply]") {
  const std::vector<std::string> words{"insufficient"};
  std::vector<ChildKind> kinds{ChildKind::Order, ChildKind::Order, ChildKind::Query,
                               ChildKind::Cancel};
  auto v = classify_reply(
      "<results><opened sym=\"A\" amount=\"1\" limit=\"2\" id=\"77\"/>"
      "<error sym=\"A\" amount=\"1\" limit=\"2\">Insufficient funds</error>"
      "<status id=\"5\"><open shares=\"1\"/></status>"
      "<error id=\"6\">nothing open</error></results>",
      kinds, words);
  CHECK(v.parsed);
  CHECK(v.positional);
  CHECK(v.ok_items == 2);
  CHECK(v.rejected_items == 2);  // insufficient funds + cancel of a closed order
  CHECK(v.error_items == 0);
  REQUIRE(v.opened_ids.size() == 4);
  CHECK(v.opened_ids[0] == "77");
  CHECK(v.opened_ids[1].empty());
  CHECK(v.rejected_texts == std::vector<std::string>{"Insufficient funds", "nothing open"});
  CHECK(v.error_texts.empty());

  auto q = classify_reply("<results><error id=\"5\">not yours</error></results>",
                          {ChildKind::Query}, words);
  CHECK(q.error_items == 1);
  CHECK(q.first_error == "not yours");
  CHECK(q.error_texts == std::vector<std::string>{"not yours"});

  auto bad = classify_reply("<?xml version=\"1.0\"?><result/>", {ChildKind::Order}, words);
  CHECK_FALSE(bad.parsed);
  CHECK(bad.error_items == 1);
  CHECK(bad.error_texts.size() == 1);

  auto other =
      classify_reply("<results><error>Unknown symbol</error></results>", {ChildKind::Order}, words);
  CHECK(other.error_items == 1);
  CHECK(other.rejected_items == 0);
}

TEST_CASE("replica normalisation ignores server-made ids and times only", "[replicas]") {
  std::vector<ChildKind> kinds{ChildKind::Order, ChildKind::Query};
  std::string a =
      "<?xml version=\"1.0\"?>\n<results>\n  <opened sym=\"X\" amount=\"5\" limit=\"1\" "
      "id=\"10\"/>\n  <status id=\"3\"><executed shares=\"1\" price=\"2\" "
      "time=\"1700000000\"/></status>\n</results>\n";
  std::string b =
      "<?xml version=\"1.0\"?><results><opened sym=\"X\" amount=\"5\" limit=\"1\" "
      "id=\"99\"/><status id=\"41\"><executed shares=\"1\" price=\"2\" "
      "time=\"1700000009\"/></status></results>";
  std::string c =
      "<?xml version=\"1.0\"?><results><opened sym=\"X\" amount=\"6\" limit=\"1\" "
      "id=\"10\"/><status id=\"3\"><executed shares=\"1\" price=\"2\" "
      "time=\"1700000000\"/></status></results>";
  CHECK(normalize_for_vote(a, kinds) == normalize_for_vote(b, kinds));
  CHECK(normalize_for_vote(a, kinds) != normalize_for_vote(c, kinds));
  // ids of created accounts are not server-made: they must match
  std::vector<ChildKind> create{ChildKind::CreateItem};
  CHECK(normalize_for_vote("<results><created id=\"1\"/></results>", create) !=
        normalize_for_vote("<results><created id=\"2\"/></results>", create));
}

TEST_CASE("the vote counts replies, failures and disagreement", "[replicas]") {
  std::vector<ChildKind> kinds{ChildKind::Order};
  auto ok = [](const std::string& body, std::int64_t end) {
    TargetResult r;
    r.ok = true;
    r.body = body;
    r.end_ns = end;
    return r;
  };
  std::string x = "<results><opened sym=\"X\" amount=\"5\" limit=\"1\" id=\"1\"/></results>";
  std::string y = "<results><opened sym=\"X\" amount=\"5\" limit=\"1\" id=\"2\"/></results>";
  std::string z = "<results><error sym=\"X\" amount=\"5\" limit=\"1\">no</error></results>";

  auto agree = vote({ok(x, 30), ok(y, 10), ok(x, 20)}, kinds);
  CHECK(agree.replied == 3);
  CHECK_FALSE(agree.disagree);
  CHECK(agree.first_ns == 10);
  CHECK(agree.all_ns == 30);

  TargetResult failed;
  failed.end_ns = 50;
  auto split = vote({ok(z, 5), ok(x, 7), ok(y, 9), failed}, kinds);
  CHECK(split.disagree);
  CHECK(split.winner == 1);  // x and y agree after normalisation: 2 votes against 1
  CHECK(split.failed == 1);
  CHECK(split.first_ns == 5);
  CHECK(split.all_ns == 50);

  auto single = vote({ok(x, 4)}, kinds);
  CHECK_FALSE(single.disagree);
  CHECK(single.first_ns == 4);
  CHECK(single.all_ns == 4);
}

// ---------------------------------------------------------------- workloads

TEST_CASE("prices are exact decimal strings", "[workload]") {
  CHECK(format_price(9735, 2) == "97.35");
  CHECK(format_price(9005, 2) == "90.05");
  CHECK(format_price(11000, 2) == "110.00");
  CHECK(format_price(100, 0) == "100");
  CHECK(format_price(900001, 4) == "90.0001");
}

TEST_CASE("orders workload: reproducible, within the documented ranges", "[workload]") {
  BenchOptions o;
  o.orders_per_request = 50;
  o.price_decimals = 2;
  o.symbols = 3;
  o.accounts = 7;
  Workload w1(o), w2(o);
  Rng r1(42), r2(42);
  std::set<std::string> syms;
  bool buy = false, sell = false;
  for (int i = 0; i < 20; ++i) {
    Request a = w1.next(r1);
    Request b = w2.next(r2);
    CHECK(a.render(0) == b.render(0));
    REQUIRE(a.transactions);
    REQUIRE(a.children.size() == 50);
    long account = std::stol(a.account);
    CHECK(account >= 900000000);  // the default --account-base
    CHECK(account < 900000007);
    for (const Child& c : a.children) {
      syms.insert(c.sym);
      long amount = std::stol(c.amount);
      (amount > 0 ? buy : sell) = true;
      CHECK(std::labs(amount) >= 1);
      CHECK(std::labs(amount) <= 100);
      double limit = std::stod(c.limit);  // test only: range check
      CHECK(limit >= 90.0);
      CHECK(limit <= 110.0);
      CHECK(c.limit.size() - c.limit.find('.') == 3);
    }
  }
  CHECK(syms == std::set<std::string>{"S0", "S1", "S2"});
  CHECK(buy);
  CHECK(sell);
}

TEST_CASE("setup covers every account and symbol in batches", "[workload]") {
  BenchOptions o;
  o.accounts = 120;
  o.symbols = 2;
  o.setup_batch = 50;
  o.account_base = 5000;
  Workload w(o);
  auto reqs = w.setup_requests();
  REQUIRE(reqs.size() == 3);
  std::size_t items = 0;
  for (const auto& r : reqs) items += r.items();
  CHECK(items == 120 + 120 * 2);
  CHECK(reqs[0].create_xml.find("<account id=\"5000\" balance=\"1000000000\"/>") !=
        std::string::npos);
  CHECK(reqs[2].create_xml.find("<account id=\"5119\">1000000000</account>") != std::string::npos);
  CHECK(reqs[2].create_xml.find("5120") == std::string::npos);
  auto root = parse_xml(reqs[1].create_xml);
  REQUIRE(root);
  CHECK(root->name == "create");
}

TEST_CASE("create workload: fresh digit-only ids with the run prefix", "[workload]") {
  BenchOptions o;
  o.workload = WorkloadKind::Create;
  o.accounts_per_request = 3;
  o.run_id = "4711";
  Workload w(o);
  Rng rng(1);
  std::set<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    Request r = w.next(rng);
    CHECK(r.items() == 6);
    auto root = parse_xml(r.render(0));
    REQUIRE(root);
    for (const auto& c : root->children)
      if (c.name == "account") ids.insert(*c.attr("id"));
  }
  CHECK(ids.size() == 15);
  for (const auto& id : ids) {
    // "9", the run id padded to 9 digits, a counter: 11+ digits, never a trading
    // account (account-base + i < 10^10) nor an example's or a test's small id.
    CHECK(id.rfind("9000004711", 0) == 0);
    CHECK(id.size() >= 11);
    CHECK(id.size() <= 32);  // PROTOCOL.md section 7: --max-id-length
    CHECK(id.find_first_not_of("0123456789") == std::string::npos);
  }
  CHECK(ids.count("90000047111") == 1);  // the counter starts at 1

  // Two run ids, one a prefix of the other: the padding keeps their ids apart.
  BenchOptions p = o;
  p.run_id = "47111";
  Workload wp(p);
  CHECK(wp.created_prefix() == "9000047111");
  CHECK(w.created_prefix() == "9000004711");
}

TEST_CASE("mixed workload queries and cancels learned ids of the same account", "[workload]") {
  BenchOptions o;
  o.workload = WorkloadKind::Mixed;
  o.accounts = 1;
  o.orders_per_request = 10;
  o.query_ratio = 0.5;
  o.cancel_ratio = 0.5;
  Workload w(o);
  Rng rng(3);
  Request first = w.next(rng);  // nothing learned yet: all orders
  for (const auto& c : first.children) CHECK(c.kind == ChildKind::Order);

  // Two replicas answered with different ids for the same orders.
  ReplyVerdict v0, v1;
  v0.positional = v1.positional = true;
  for (int i = 0; i < 10; ++i) {
    v0.opened_ids.push_back("a" + std::to_string(i));
    v1.opened_ids.push_back("b" + std::to_string(i));
  }
  w.learn(first, {&v0, &v1});
  CHECK(w.id_pool_size() == 10);

  Request next = w.next(rng);
  int queries = 0, cancels = 0;
  for (const auto& c : next.children) {
    if (c.kind == ChildKind::Order) continue;
    (c.kind == ChildKind::Query ? queries : cancels)++;
    REQUIRE(c.ids.size() == 2);
    CHECK(c.ids[0].substr(1) == c.ids[1].substr(1));  // the same order on both
  }
  CHECK(queries + cancels == 10);
  CHECK(cancels > 0);
  CHECK(w.id_pool_size() == 10u - static_cast<unsigned>(cancels));
  std::string r0 = next.render(0), r1 = next.render(1);
  CHECK(r0.find("id=\"a") != std::string::npos);
  CHECK(r0.find("id=\"b") == std::string::npos);
  CHECK(r1.find("id=\"b") != std::string::npos);
}

TEST_CASE("bench options: defaults and validation", "[options]") {
  BenchOptions o;
  const char* ok[] = {"bench", "--workload", "create", "--mode", "open", "--rate", "50"};
  REQUIRE(parse_bench_options(7, ok, o).kind == ParseOutcome::Run);
  CHECK(o.workload == WorkloadKind::Create);
  CHECK_FALSE(o.setup);  // create needs no setup
  CHECK(o.requests == 1000);
  CHECK(o.run_id.size() == 9);
  CHECK(o.run_id[0] != '0');
  // Trading accounts far from the examples' 1001/1002 (examples/01-create.xml).
  CHECK(o.account_base == 900000000u);
  Workload defaults(o);
  CHECK(defaults.account_id(0) == "900000000");
  CHECK(defaults.account_id(199) == "900000199");

  BenchOptions big;
  const char* too_big[] = {"bench", "--account-base", "9999999900", "--accounts", "200"};
  CHECK(parse_bench_options(5, too_big, big).kind == ParseOutcome::Error);
  BenchOptions edge;
  const char* at_edge[] = {"bench", "--account-base", "9999999800", "--accounts", "200"};
  CHECK(parse_bench_options(5, at_edge, edge).kind == ParseOutcome::Run);
  BenchOptions rid;
  const char* long_run_id[] = {"bench", "--run-id", "1234567890"};
  CHECK(parse_bench_options(3, long_run_id, rid).kind == ParseOutcome::Error);

  BenchOptions p;
  const char* orders[] = {"bench", "--replicas", "a:1,b:2", "--no-setup"};
  REQUIRE(parse_bench_options(4, orders, p).kind == ParseOutcome::Run);
  CHECK_FALSE(p.setup);
  CHECK(p.replicas == std::vector<std::string>{"a:1", "b:2"});

  BenchOptions q;
  const char* both[] = {"bench", "--requests", "5", "--duration", "3"};
  CHECK(parse_bench_options(5, both, q).kind == ParseOutcome::Error);
  BenchOptions r;
  const char* ratio[] = {"bench", "--query-ratio", "0.7", "--cancel-ratio", "0.5"};
  CHECK(parse_bench_options(5, ratio, r).kind == ParseOutcome::Error);
  BenchOptions s;
  const char* bal[] = {"bench", "--balance", "1e9"};
  CHECK(parse_bench_options(3, bal, s).kind == ParseOutcome::Error);
}

TEST_CASE("class mix: parsed strictly, drawn by weight, reproducible", "[workload][options]") {
  BenchOptions o;
  const char* mix[] = {"bench", "--workload", "query", "--class-mix", "1:10,8:20,10:20,50:50"};
  REQUIRE(parse_bench_options(5, mix, o).kind == ParseOutcome::Run);
  REQUIRE(o.class_mix.size() == 4);
  CHECK(o.class_mix[3].children == 50);
  CHECK(o.class_mix[3].weight == 50);

  for (const char* bad : {"8", "8:", ":5", "0:5", "8:0", "8:-1", "8x:5", "8:5x"}) {
    BenchOptions b;
    const char* args[] = {"bench", "--class-mix", bad};
    CHECK(parse_bench_options(3, args, b).kind == ParseOutcome::Error);
  }
  BenchOptions c;
  const char* create[] = {"bench", "--workload", "create", "--class-mix", "1:1"};
  CHECK(parse_bench_options(5, create, c).kind == ParseOutcome::Error);

  // Orders workload with two classes 1:3 and 4:1: about a quarter of the
  // requests have 4 children, the rest 1, and the same seed gives the same stream.
  BenchOptions w;
  w.class_mix = {{1, 3}, {4, 1}};
  Workload w1(w), w2(w);
  Rng r1(9), r2(9);
  int four = 0;
  for (int i = 0; i < 4000; ++i) {
    Request a = w1.next(r1);
    CHECK(a.render(0) == w2.next(r2).render(0));
    REQUIRE((a.children.size() == 1 || a.children.size() == 4));
    four += a.children.size() == 4;
  }
  CHECK(four > 850);  // expected 1000; sd about 27
  CHECK(four < 1150);
}

// ---------------------------------------------------------------- rejection reasons

TEST_CASE("reasons: numbers folded, control characters blanked, long texts cut", "[reasons]") {
  CHECK(reason_of("Insufficient funds: order needs 5000.5, balance is 300") ==
        "Insufficient funds: order needs N, balance is N");
  CHECK(reason_of("Insufficient funds: order needs 7, balance is 0.25") ==
        "Insufficient funds: order needs N, balance is N");
  CHECK(reason_of("Order has nothing open to cancel") == "Order has nothing open to cancel");
  CHECK(reason_of("limit (--max-open-orders); retry") == "limit (--max-open-orders); retry");
  CHECK(reason_of("1.") == "N.");  // a dot not followed by digits stays
  CHECK(reason_of("a\nb\tc") == "a b c");
  CHECK(reason_of("") == "");
  std::string exact(120, 'x');
  CHECK(reason_of(exact) == exact);
  std::string cut = reason_of(std::string(500, 'y'));
  CHECK(cut == std::string(120, 'y') + "...");
}

TEST_CASE("reasons: tallied, most frequent first, the rest as other", "[reasons]") {
  ReasonTally t;
  CHECK(t.total() == 0);
  CHECK(describe_reasons(t) == "");
  for (int i = 0; i < 180; ++i) t.add("Order has nothing open to cancel");
  for (int i = 0; i < 40; ++i)
    t.add("Insufficient shares: order sells " + std::to_string(i + 1) + ", position is 0");
  t.add("Unknown symbol", 4);
  t.add("B reason", 2);
  t.add("A reason", 2);
  t.add("Zeta");
  CHECK(t.total() == 229);
  CHECK(t.distinct() == 6);

  auto top = t.top(3);
  REQUIRE(top.size() == 3);
  CHECK(top[0].reason == "Order has nothing open to cancel");
  CHECK(top[0].count == 180);
  CHECK(top[1].reason == "Insufficient shares: order sells N, position is N");
  CHECK(top[1].count == 40);
  CHECK(top[2].reason == "Unknown symbol");
  CHECK(t.other(3) == 5);
  CHECK(t.top(5)[3].reason == "A reason");  // ties: alphabetical
  CHECK(t.other(10) == 0);
  CHECK(describe_reasons(t, 2) ==
        "180 'Order has nothing open to cancel', "
        "40 'Insufficient shares: order sells N, position is N', 9 other");
  CHECK(describe_reasons(t, 6).find("other") == std::string::npos);

  ReasonTally u;
  u.add("Unknown symbol");
  u.merge(t);
  CHECK(u.total() == 230);
  CHECK(u.top(3)[2].count == 5);
}

TEST_CASE("reasons: distinct texts beyond the cap count as other", "[reasons]") {
  ReasonTally t(2);
  t.add("a");
  t.add("b");
  t.add("c");  // third distinct reason: only counted
  t.add("a");
  CHECK(t.total() == 4);
  CHECK(t.distinct() == 2);
  CHECK(t.top(5).size() == 2);
  CHECK(t.other(5) == 1);
  CHECK(describe_reasons(t) == "2 'a', 1 'b', 1 other");
}

// ---------------------------------------------------------------- sessions counted

namespace {

// A persistent-session server: a thread per connection, each answering the hello
// and then every framed request with an empty <results/>. Counts connections.
class SessionServer {
 public:
  SessionServer() {
    listen_fd_ = testing_support::listen_loopback(port_, 64);
    acceptor_ = std::thread([this] {
      for (;;) {
        int fd = ::accept(listen_fd_, nullptr, nullptr);
        if (fd < 0) return;
        ++accepted_;
        std::lock_guard<std::mutex> lock(mutex_);
        workers_.emplace_back([fd] {
          if (read_line(fd) == "EXCHANGE-SESSION 1") {
            write_str(fd, "EXCHANGE-SESSION 1 OK\n");
            for (;;) {
              std::string line = read_line(fd);
              if (line.empty()) break;  // the client closed the session
              read_n(fd, std::stoul(line));
              write_str(fd, "10\n<results/>");
            }
          }
          ::close(fd);
        });
      }
    });
  }
  ~SessionServer() {
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    acceptor_.join();
    for (auto& w : workers_) w.join();  // every client session is closed by now
  }
  std::uint16_t port() const { return port_; }
  int accepted() const { return accepted_.load(); }

 private:
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<int> accepted_{0};
  std::mutex mutex_;
  std::vector<std::thread> workers_;
  std::thread acceptor_;
};

}  // namespace

TEST_CASE("sessions: a repetition counts the sessions its clients opened", "[net][sessions]") {
  SessionServer server;
  {
    Targets targets({{"127.0.0.1", server.port()}}, short_timeouts(), true);
    TimeBase tb;
    // What bench does before measuring: the preflight opens a session, the setup
    // borrows it, and it goes back to the pool. (Reused by one of the clients, it
    // made 64 clients show "63 opened".)
    targets.preflight();
    REQUIRE(targets.exchange(0, "<create/>", tb).ok);
    CHECK(targets.sessions_opened() == 1);

    auto repetition = [&](unsigned clients) {
      SessionMeter meter(targets);
      {
        std::vector<std::unique_ptr<Executor>> executors;  // one per client, alive together
        std::vector<TargetResult> results;
        for (unsigned c = 0; c < clients; ++c) {
          executors.push_back(std::make_unique<Executor>(targets, Executor::Mode::Inline, tb));
          executors.back()->run({"<transactions/>"}, results);
          REQUIRE(results.at(0).ok);
          executors.back()->run({"<transactions/>"}, results);  // same session again
        }
      }  // the clients hand their sessions back to the pool
      return std::make_pair(meter.closed_before(), meter.opened());
    };
    auto first = repetition(4);
    CHECK(first.first == 1);   // the setup's session was closed, not reused
    CHECK(first.second == 4);  // one per client
    auto second = repetition(3);
    CHECK(second.first == 4);  // the first repetition's sessions
    CHECK(second.second == 3);
    CHECK(targets.sessions_opened() == 1 + 4 + 3);
  }
  CHECK(server.accepted() == 8);  // what the client counted is what the server saw
}

TEST_CASE("bench --servers: requests go to the server that serves; no reply is not resent",
          "[failover]") {
  std::atomic<int> at_other{0};
  OneShotServer dies([&](int fd) {
    read_n(fd, std::stoul(read_line(fd)));  // takes one whole request, then closes: a crash
  });
  OneShotServer other(
      [&](int fd, int) {
        ++at_other;
        read_n(fd, std::stoul(read_line(fd)));
        write_str(fd, kServed);
      },
      2);
  auto targets = Targets::failover(
      {{"127.0.0.1", closed_port()}, {"127.0.0.1", dies.port()}, {"127.0.0.1", other.port()}},
      short_timeouts(), false, std::chrono::milliseconds(500));
  CHECK(targets->size() == 1);
  TimeBase tb;
  // The first server is down: passed over; the second takes it and dies without a reply.
  TargetResult lost = targets->exchange(0, "<create/>", tb);
  CHECK_FALSE(lost.ok);
  CHECK_THAT(lost.error, Catch::Contains("outcome unknown"));
  CHECK(at_other == 0);  // not resent
  // The next requests go to the third.
  TargetResult served = targets->exchange(0, "<create/>", tb);
  CHECK(served.ok);
  CHECK(served.body == kServed);
  CHECK(targets->endpoint(0).port() == other.port());
  CHECK(targets->exchange(0, "<create/>", tb).ok);
  CHECK(at_other == 2);
}
