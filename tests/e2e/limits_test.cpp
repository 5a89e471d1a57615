// The server's limits against the real binary over real sockets: each abusive input gets a
// clear error (or a clean close), and the server goes on serving a normal request afterwards.
// Timing is never asserted beyond generous deadlines: the machine running this may be slow and
// shared.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "support/checks.hpp"
#include "support/raw_client.hpp"
#include "support/reply_xml.hpp"
#include "support/server_process.hpp"
#include "support/wire_client.hpp"

using namespace testing_support;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kDecl = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";

std::vector<std::string> server_flags(const std::string& model, std::vector<std::string> extra) {
  std::vector<std::string> f = {"--concurrency", model, "--threads", "2", "--reset"};
  f.insert(f.end(), extra.begin(), extra.end());
  return f;
}

// A normal request, answered normally: a new account is created.
void require_still_serving(unsigned short port) {
  static std::atomic<int> next{900000};
  std::string id = std::to_string(next++);
  ParsedReply r;
  parse_reply(
      send_request(port, kDecl + "<create><account id=\"" + id + "\" balance=\"10\"/></create>"),
      r);
  REQUIRE(r.items.size() == 1);
  CHECK(std::string(r.items[0].name()) == "created");
  CHECK(std::string(r.items[0].attribute("id").value()) == id);
}

std::string repeat(const std::string& s, std::size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (std::size_t i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace

TEST_CASE("a length line of 10^12 is refused at once, without waiting for the bytes",
          "[e2e][limits]") {
  auto model = GENERATE(from_range(models_under_test()));
  INFO("model " << model);
  ServerProcess server(server_flags(model, {}));
  // The connection stays open for writing: the server must answer from the length line alone
  // (it neither allocates nor waits for a terabyte).
  RawClient conn(server.port());
  REQUIRE(conn.try_send("1000000000000\n<create>"));
  bool closed = false;
  std::string reply = conn.read_to_end(std::chrono::seconds(10), closed);
  CHECK(closed);
  std::string why = single_error(reply);
  CHECK(contains(why, "1000000000000"));
  CHECK(contains(why, "exceeds the limit of 1048576 bytes"));
  // A length beyond 64 bits, and one just over a lowered limit.
  CHECK(contains(single_error(send_raw(server.port(), std::string(40, '9') + "\n<create/>")),
                 "exceeds the limit"));
  require_still_serving(server.port());
}

TEST_CASE("--max-request-bytes refuses a request one byte over it", "[e2e][limits]") {
  ServerProcess server(server_flags("pool", {"--max-request-bytes", "100"}));
  std::string body = "<create><account id=\"1\" balance=\"1\"/></create>";
  body += std::string(101 - body.size(), ' ');
  CHECK(contains(single_error(send_request(server.port(), body)),
                 "Request of 101 bytes exceeds the limit of 100 bytes"));
  require_still_serving(server.port());
}

TEST_CASE("a client that stalls or trickles is cut off after --read-timeout-ms", "[e2e][limits]") {
  auto model = GENERATE(from_range(models_under_test()));
  INFO("model " << model);
  ServerProcess server(server_flags(model, {"--read-timeout-ms", "300"}));

  // Half a request, then nothing.
  RawClient stalled(server.port());
  REQUIRE(stalled.try_send("100\n<create><account"));
  // Meanwhile others are served (for per-client: by their own threads).
  require_still_serving(server.port());
  bool closed = false;
  std::string reply = stalled.read_to_end(std::chrono::seconds(10), closed);
  CHECK(closed);
  CHECK(contains(single_error(reply), "timed out waiting for the rest of the request"));

  // A connection that never sends anything is closed quietly.
  RawClient idle(server.port());
  CHECK(idle.read_to_end(std::chrono::seconds(10), closed).empty());
  CHECK(closed);

  // One byte every 50 ms: each read is quick, but the whole request (5 s at this pace) is not
  // done within the timeout, which bounds the whole request, not each read.
  std::string body = kDecl + "<create><account id=\"55\" balance=\"1\"/></create>";
  std::string request = std::to_string(body.size()) + "\n" + body;
  RawClient trickle(server.port());
  auto started = Clock::now();
  std::size_t sent = 0;
  for (; sent < request.size() && !trickle.readable_within(std::chrono::milliseconds(50)); ++sent)
    if (!trickle.try_send(request.substr(sent, 1))) break;
  CHECK(sent < request.size());
  reply = trickle.read_to_end(std::chrono::seconds(10), closed);
  CHECK(closed);
  CHECK(contains(single_error(reply), "timed out"));
  CHECK(Clock::now() - started < std::chrono::seconds(20));

  require_still_serving(server.port());
}

TEST_CASE("--max-connections: one more is told the server is busy, closing some makes room",
          "[e2e][limits]") {
  auto model = GENERATE(from_range(models_under_test()));
  INFO("model " << model);
  // A long read timeout: the idle connections must outlive the test.
  ServerProcess server(
      server_flags(model, {"--max-connections", "20", "--read-timeout-ms", "120000"}));
  // Twenty sessions, each past its first request, so each surely holds a slot and is
  // authenticated (one that is not would give way to a newcomer: hostile_clients_test). A
  // connection that closed just before (the harness's start-up probe) may still hold one for a
  // moment: retry those.
  std::vector<std::unique_ptr<Session>> idle;
  auto deadline = Clock::now() + std::chrono::seconds(10);
  while (idle.size() < 20 && Clock::now() < deadline) {
    try {
      auto session = std::make_unique<Session>(server.port());
      session->request(kDecl + "<create/>");
      idle.push_back(std::move(session));
    } catch (const std::exception&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  REQUIRE(idle.size() == 20);

  RawClient extra(server.port());
  bool closed = false;
  std::string reply = extra.read_to_end(std::chrono::seconds(10), closed);
  CHECK(closed);
  CHECK(single_error(reply) == "Server busy: too many open connections (limit 20)");
  // A normal one-request client gets the same answer, not a hang.
  CHECK(single_error(send_request(server.port(), "<create/>")) ==
        "Server busy: too many open connections (limit 20)");

  // The connections the server kept are still served.
  ParsedReply kept;
  parse_reply(idle[0]->request(kDecl + "<create><account id=\"8\" balance=\"1\"/></create>"), kept);
  REQUIRE(kept.items.size() == 1);
  CHECK(std::string(kept.items[0].name()) == "created");

  // Closing five makes room: within a generous deadline new clients are served again.
  idle.erase(idle.begin(), idle.begin() + 5);
  deadline = Clock::now() + std::chrono::seconds(10);
  std::string last;
  while (Clock::now() < deadline) {
    last =
        send_request(server.port(), kDecl + "<create><account id=\"7\" balance=\"1\"/></create>");
    if (!contains(last, "Server busy")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ParsedReply r;
  parse_reply(last, r);
  REQUIRE(r.items.size() == 1);
  CHECK(std::string(r.items[0].name()) == "created");
  require_still_serving(server.port());
}

TEST_CASE("--max-children refuses a request with too many children as a whole", "[e2e][limits]") {
  auto model = GENERATE(from_range(models_under_test()));
  INFO("model " << model);
  ServerProcess server(server_flags(model, {"--max-children", "5"}));
  const std::string account = "<account id=\"1\" balance=\"1000\"/>";
  const std::string query = "<query id=\"1\"/>";

  std::string why = single_error(send_request(
      server.port(), kDecl + "<transactions id=\"1\">" + repeat(query, 6) + "</transactions>"));
  CHECK(contains(why, "more than 5 children in <transactions>"));
  // A <symbol> with five <account>s is six children: refused, and nothing of it is applied.
  why = single_error(send_request(
      server.port(), kDecl + "<create>" + account + "<symbol sym=\"S\">" +
                         repeat("<account id=\"1\">1</account>", 5) + "</symbol></create>"));
  CHECK(contains(why, "more than 5 children in <create>"));
  CHECK(contains(send_request(server.port(), "<transactions id=\"1\">" + query + "</transactions>"),
                 "Unknown account"));

  // Exactly five: served, one reply each.
  ParsedReply r;
  parse_reply(send_request(server.port(), kDecl + "<create>" + account + "<symbol sym=\"S\">" +
                                              repeat("<account id=\"1\">1</account>", 3) +
                                              "</symbol></create>"),
              r);
  REQUIRE(r.items.size() == 4);
  for (auto item : r.items) CHECK(std::string(item.name()) == "created");
  ParsedReply q;
  parse_reply(
      send_request(server.port(), "<transactions id=\"1\">" + repeat(query, 5) + "</transactions>"),
      q);
  CHECK(q.items.size() == 5);
  require_still_serving(server.port());
}

TEST_CASE("the default --max-children is 10000", "[e2e][limits]") {
  ServerProcess server(server_flags("pool", {}));
  const std::string query = "<query id=\"1\"/>";
  CHECK(contains(
      single_error(send_request(
          server.port(), "<transactions id=\"1\">" + repeat(query, 10001) + "</transactions>")),
      "more than 10000 children"));
  ParsedReply r;
  parse_reply(send_request(server.port(),
                           "<transactions id=\"1\">" + repeat(query, 10000) + "</transactions>"),
              r);
  CHECK(r.items.size() == 10000);
  require_still_serving(server.port());
}

TEST_CASE("100000 nested elements neither crash nor hang the server", "[e2e][limits]") {
  auto model = GENERATE(from_range(models_under_test()));
  INFO("model " << model);
  ServerProcess server(server_flags(model, {}));
  const std::size_t depth = 100000;
  // Every walk over the tree (pugixml's parser and destructor, ours) is iterative, so depth
  // needs no limit of its own: the request size bounds it, and the child gets an error.
  std::string nested = repeat("<a>", depth) + repeat("</a>", depth);
  std::string body = "<create>" + nested + "</create>";
  REQUIRE(body.size() < (1u << 20));
  ParsedReply r;
  parse_reply(send_request(server.port(), body), r);
  REQUIRE(r.items.size() == 1);
  CHECK(std::string(r.items[0].name()) == "error");
  CHECK(contains(r.items[0].text().get(), "Unknown element <a> in <create>"));

  // Inside an <account> of a <symbol>, and inside an <order>.
  ParsedReply s;
  parse_reply(send_request(server.port(), "<create><symbol sym=\"D\"><account id=\"1\">" + nested +
                                              "</account></symbol></create>"),
              s);
  REQUIRE(s.items.size() == 1);
  CHECK(contains(s.items[0].text().get(), "Unexpected element <a> inside <account>"));
  ParsedReply t;
  parse_reply(send_request(server.port(),
                           "<transactions id=\"1\"><order sym=\"D\" amount=\"1\" "
                           "limit=\"1\">" +
                               nested + "</order></transactions>"),
              t);
  CHECK(t.items.size() == 1);

  // Unclosed: malformed XML, refused as a whole.
  CHECK(contains(single_error(send_request(server.port(), "<create>" + repeat("<a>", depth))),
                 "Malformed XML"));
  require_still_serving(server.port());
}

TEST_CASE("huge and malformed numbers get an error each, the rest is applied", "[e2e][limits]") {
  auto model = GENERATE(from_range(models_under_test()));
  INFO("model " << model);
  ServerProcess server(server_flags(model, {}));
  const std::vector<std::string> bad = {"1" + std::string(40, '0'),
                                        "1e999",
                                        "NaN",
                                        "nan",
                                        "inf",
                                        "-Infinity",
                                        "1,5",
                                        "0x10",
                                        "1.5.5",
                                        "",
                                        " ",
                                        "+",
                                        "1.0000001",
                                        "1234567890123"};
  std::string body = "<create><account id=\"1\" balance=\"1000\"/>";
  for (std::size_t i = 0; i < bad.size(); ++i)
    body += "<account id=\"" + std::to_string(100 + i) + "\" balance=\"" + bad[i] + "\"/>";
  body += "<symbol sym=\"N\">";
  for (const auto& b : bad) body += "<account id=\"1\">" + b + "</account>";
  body += "<account id=\"1\">10</account></symbol></create>";
  ParsedReply r;
  parse_reply(send_request(server.port(), kDecl + body), r);
  REQUIRE(r.items.size() == 2 * bad.size() + 2);
  CHECK(std::string(r.items[0].name()) == "created");
  for (std::size_t i = 0; i < bad.size(); ++i) {
    INFO("balance '" << bad[i] << "'");
    CHECK(std::string(r.items[1 + i].name()) == "error");
    CHECK(contains(r.items[1 + i].text().get(), "Invalid balance"));
    INFO("shares '" << bad[i] << "'");
    CHECK(std::string(r.items[1 + bad.size() + i].name()) == "error");
    CHECK(contains(r.items[1 + bad.size() + i].text().get(), "Invalid amount"));
  }
  CHECK(std::string(r.items.back().name()) == "created");

  std::string orders = "<transactions id=\"1\">";
  for (const auto& b : bad) {
    orders += "<order sym=\"N\" amount=\"" + b + "\" limit=\"1\"/>";
    orders += "<order sym=\"N\" amount=\"-1\" limit=\"" + b + "\"/>";
  }
  orders += "<order sym=\"N\" amount=\"-1\" limit=\"2\"/></transactions>";
  ParsedReply o;
  parse_reply(send_request(server.port(), kDecl + orders), o);
  REQUIRE(o.items.size() == 2 * bad.size() + 1);
  for (std::size_t i = 0; i < bad.size(); ++i) {
    INFO("'" << bad[i] << "'");
    CHECK(contains(o.items[2 * i].text().get(), "Invalid amount"));
    CHECK(contains(o.items[2 * i + 1].text().get(), "Invalid limit"));
    // The echo is the request's text exactly.
    CHECK(std::string(o.items[2 * i].attribute("amount").value()) == bad[i]);
  }
  CHECK(std::string(o.items.back().name()) == "opened");
  require_still_serving(server.port());
}

TEST_CASE("bytes that are not UTF-8 are refused with a clear error", "[e2e][limits]") {
  auto model = GENERATE(from_range(models_under_test()));
  INFO("model " << model);
  ServerProcess server(server_flags(model, {}));
  const std::vector<std::string> bad = {
      "\xff",              // never in UTF-8
      "\xc0\xaf",          // overlong '/'
      "\xed\xa0\x80",      // a UTF-16 surrogate
      "\xf4\x90\x80\x80",  // beyond U+10FFFF
      "\xe2\x82",          // cut short
      "caf\xe9",           // Latin-1
  };
  for (const auto& b : bad) {
    INFO("bytes of length " << b.size());
    CHECK(single_error(send_request(server.port(),
                                    "<create><account id=\"1\" balance=\"1\"/><symbol sym=\"" + b +
                                        "\"><account id=\"1\">1</account></symbol></create>")) ==
          "Request is not valid UTF-8");
  }
  // Valid UTF-8 that is no symbol name gets an error for that child only.
  ParsedReply r;
  parse_reply(send_request(server.port(),
                           "<create><symbol sym=\"caf\xc3\xa9\"><account "
                           "id=\"1\">1</account></symbol></create>"),
              r);
  REQUIRE(r.items.size() == 1);
  CHECK(contains(r.items[0].text().get(), "Invalid symbol name"));
  require_still_serving(server.port());
}
