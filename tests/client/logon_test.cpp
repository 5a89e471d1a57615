// The key logon (PROTOCOL.md section 2) against fake servers: the line goes first and is
// pipelined with the request or the session hello; a refusal is "logon refused: why" and
// NotSent; the key never shows in a message.
#include "net/logon.hpp"

#include <atomic>
#include <string>

#include <catch2/catch.hpp>

#include "bench/executor.hpp"
#include "fake_server.hpp"
#include "net/failover.hpp"
#include "net/session.hpp"

using namespace exch;
using namespace client_test;

namespace {

const std::string kReply =
    "<?xml version=\"1.0\"?>\n<results>\n  <created id=\"1\"/>\n</results>\n";
const std::string kRefusal = "EXCHANGE-LOGON 1 REFUSED unknown principal or wrong key\n";

net::ConnectOptions as_alice() {
  net::ConnectOptions o(short_timeouts());
  o.credentials = {"alice", "s3cr3t-key"};
  return o;
}

}  // namespace

TEST_CASE("logon: the line goes first, pipelined with the request", "[logon]") {
  std::string logon, request;
  {
    OneShotServer server([&](int fd) {
      // Both before answering: a client that waited for OK would time out here.
      logon = read_line(fd);
      request = read_n(fd, std::stoul(read_line(fd)));
      write_str(fd, "EXCHANGE-LOGON 1 OK\n" + kReply);
    });
    auto ep = net::Endpoint::resolve("127.0.0.1", server.port());
    CHECK(net::request_once(ep, "<create/>", as_alice()) == kReply);
  }
  CHECK(logon == "EXCHANGE-LOGON 1 alice s3cr3t-key");
  CHECK(request == "<create/>");
}

TEST_CASE("logon: a refusal is NotSent, 'logon refused: why'", "[logon]") {
  OneShotServer server([&](int fd) {
    read_line(fd);
    read_n(fd, std::stoul(read_line(fd)));  // drained, so that the close is clean
    write_str(fd, kRefusal);
  });
  auto ep = net::Endpoint::resolve("127.0.0.1", server.port());
  try {
    net::request_once(ep, "<create/>", as_alice());
    FAIL("a refused logon returned a reply");
  } catch (const net::NotSent& e) {
    CHECK(dynamic_cast<const net::LogonRefused*>(&e) != nullptr);
    CHECK(std::string(e.what()) == "logon refused: unknown principal or wrong key");
  }
}

TEST_CASE("logon: a server without it fails clearly, and the key is not quoted", "[logon]") {
  OneShotServer server([&](int fd) {
    std::string line = read_line(fd);
    write_str(fd, "<?xml version=\"1.0\"?>\n<results><error>bad length line: " + line +
                      "</error></results>\n");
  });
  auto ep = net::Endpoint::resolve("127.0.0.1", server.port());
  try {
    net::request_once(ep, "<create/>", as_alice());
    FAIL("no error");
  } catch (const net::NotSent& e) {
    std::string what = e.what();
    CHECK_THAT(what, Catch::StartsWith("server does not support key logon (it answered: <?xml"));
    CHECK_THAT(what, Catch::Contains("EXCHANGE-LOGON 1 alice <key>"));
    CHECK(what.find("s3cr3t") == std::string::npos);
  }
}

TEST_CASE("logon: silence after the request left is an unknown outcome", "[logon]") {
  OneShotServer server([&](int fd) {
    read_line(fd);
    read_n(fd, std::stoul(read_line(fd)));  // takes all, answers nothing, closes
  });
  auto ep = net::Endpoint::resolve("127.0.0.1", server.port());
  CHECK_THROWS_AS(net::request_once(ep, "<create/>", as_alice()), net::NoReply);
}

TEST_CASE("logon: a persistent session logs on, then says the hello", "[logon]") {
  std::string logon, hello, first, second;
  OneShotServer server([&](int fd) {
    logon = read_line(fd);
    hello = read_line(fd);  // pipelined behind the logon line
    write_str(fd, "EXCHANGE-LOGON 1 OK\nEXCHANGE-SESSION 1 OK\n");
    first = read_n(fd, std::stoul(read_line(fd)));
    write_str(fd, "10\n<results/>");
    second = read_n(fd, std::stoul(read_line(fd)));
    write_str(fd, "11\n<results/>\n");
    read_line(fd);  // until the client closes
  });
  auto ep = net::Endpoint::resolve("127.0.0.1", server.port());
  auto session = net::Session::open(ep, as_alice());
  CHECK(session->request("<a/>") == "<results/>");
  CHECK(session->request("<b/>") == "<results/>\n");
  session.reset();
  CHECK(logon == "EXCHANGE-LOGON 1 alice s3cr3t-key");
  CHECK(hello == "EXCHANGE-SESSION 1");
  CHECK(first == "<a/>");
  CHECK(second == "<b/>");
}

TEST_CASE("logon: a session whose logon is refused is not opened", "[logon]") {
  OneShotServer server([&](int fd) {
    read_line(fd);
    read_line(fd);
    write_str(fd, kRefusal);
  });
  auto ep = net::Endpoint::resolve("127.0.0.1", server.port());
  CHECK_THROWS_MATCHES(net::Session::open(ep, as_alice()), net::LogonRefused,
                       Catch::Message("logon refused: unknown principal or wrong key"));
}

TEST_CASE("logon: refused by every server, failover stops at once", "[logon][failover]") {
  std::atomic<int> connections{0};
  auto refuse = [&](int fd, int) {
    ++connections;
    read_line(fd);
    read_n(fd, std::stoul(read_line(fd)));
    write_str(fd, kRefusal);
  };
  OneShotServer a(refuse, 5), b(refuse, 5);
  net::Failover::Options o;
  o.connect = as_alice();
  o.wait = std::chrono::milliseconds(3000);  // not waited for: no takeover changes a key
  net::Failover f(
      net::resolve_servers(
          "127.0.0.1:" + std::to_string(a.port()) + ",127.0.0.1:" + std::to_string(b.port()), 1),
      o);
  auto t0 = std::chrono::steady_clock::now();
  auto answer = f.request("<create/>");
  CHECK(answer.kind == net::Failover::Answer::Kind::Unreachable);
  CHECK(answer.logon_refused);
  CHECK(answer.error == "logon refused: unknown principal or wrong key");
  CHECK(connections == 2);  // once each
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(1000));
}

TEST_CASE("logon: bench preflights the logon and stops on a refusal", "[logon][sessions]") {
  std::string probe_line;
  OneShotServer server(
      [&](int fd, int i) {
        std::string line = read_line(fd);
        if (i == 0) {  // the preflight: a logon alone, then the client closes
          probe_line = line;
          write_str(fd, "EXCHANGE-LOGON 1 OK\n");
          read_line(fd);
          return;
        }
        read_n(fd, std::stoul(read_line(fd)));
        write_str(fd, kRefusal);  // say the key was revoked meanwhile
      },
      2);
  bench::Targets targets({{"127.0.0.1", server.port()}}, as_alice(), false);
  targets.preflight();
  CHECK(probe_line == "EXCHANGE-LOGON 1 alice s3cr3t-key");
  bench::TimeBase tb;
  bench::TargetResult r = targets.exchange(0, "<create/>", tb);
  CHECK_FALSE(r.ok);
  CHECK(r.fatal);  // the run aborts: every request would be refused
  CHECK(r.error == "logon refused: unknown principal or wrong key");
}

TEST_CASE("logon: the line, and the key redacted from quotes", "[logon]") {
  CHECK(net::logon_line({"desk-a", "k"}) == "EXCHANGE-LOGON 1 desk-a k\n");
  CHECK(net::redact_key("a k b kk", "k") == "a <key> b <key><key>");
  CHECK(net::redact_key("abc", "") == "abc");
}
