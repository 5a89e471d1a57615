// TLS against an in-process OpenSSL server with a PKI made at test time: one-shot requests
// and sessions, verification failures named clearly, session resumption counted, mutual TLS.
#include "net/tls.hpp"

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "bench/executor.hpp"
#include "fake_server.hpp"
#include "net/session.hpp"
#include "tls_fixture.hpp"

using namespace exch;
using namespace client_test;

namespace {

const std::string kReply =
    "<?xml version=\"1.0\"?>\n<results>\n  <created id=\"1\"/>\n</results>\n";

// Serves one one-shot request: reads it whole, answers kReply. A client that sends nothing
// (bench's preflight) gets nothing.
void one_shot(SSL* ssl, int) {
  std::string length = ssl_read_line(ssl);
  if (length.empty()) return;
  ssl_read_n(ssl, std::stoul(length));
  ssl_write(ssl, kReply);
}

net::ConnectOptions tls_to(const std::string& ca, bool resume = true) {
  net::TlsOptions t;
  t.enabled = true;
  t.ca_file = ca;
  t.resume = resume;
  net::ConnectOptions o(short_timeouts());
  o.tls = net::TlsClient::create(t);
  return o;
}

net::Endpoint here(std::uint16_t port) { return net::Endpoint::resolve("127.0.0.1", port); }

// The message of the NotSent that `f` throws ("" and a failure if it throws none).
template <typename F>
std::string not_sent(F f) {
  try {
    f();
  } catch (const net::NotSent& e) {
    return e.what();
  }
  FAIL_CHECK("no NotSent thrown");
  return "";
}

}  // namespace

TEST_CASE("tls: a one-shot request", "[tls]") {
  TestPki pki;
  TlsServer server({pki.server_cert, pki.server_key}, one_shot);
  auto o = tls_to(pki.ca_file);
  CHECK(net::request_once(here(server.port()), "<create/>", o) == kReply);
  CHECK(o.tls->counts().handshakes == 1);
  CHECK(o.tls->counts().resumed == 0);
}

TEST_CASE("tls: a server that closes TCP without close_notify still ends the reply", "[tls]") {
  TestPki pki;
  TlsServer server({pki.server_cert, pki.server_key}, [](SSL* ssl, int) {
    one_shot(ssl, 0);
    SSL_set_quiet_shutdown(ssl, 1);  // no close_notify: the fixture's shutdown sends nothing
  });
  CHECK(net::request_once(here(server.port()), "<create/>", tls_to(pki.ca_file)) == kReply);
}

TEST_CASE("tls: a persistent session with logon; a late ticket does not make it stale",
          "[tls][logon]") {
  TestPki pki;
  std::string logon, hello, first, second;
  TlsServer server({pki.server_cert, pki.server_key}, [&](SSL* ssl, int) {
    logon = ssl_read_line(ssl);
    hello = ssl_read_line(ssl);
    ssl_write(ssl, "EXCHANGE-LOGON 1 OK\nEXCHANGE-SESSION 1 OK\n");
    first = ssl_read_n(ssl, std::stoul(ssl_read_line(ssl)));
    ssl_write(ssl, "10\n<results/>");
    SSL_new_session_ticket(ssl);  // sent now, while the session is idle
    SSL_do_handshake(ssl);
    second = ssl_read_n(ssl, std::stoul(ssl_read_line(ssl)));
    ssl_write(ssl, "10\n<results/>");
  });  // then close_notify, as an idle timeout would
  auto o = tls_to(pki.ca_file);
  o.credentials = {"alice", "k"};
  auto session = net::Session::open(here(server.port()), o);
  CHECK(session->request("<a/>") == "<results/>");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK_FALSE(session->stale());  // only TLS records arrived
  CHECK(session->request("<bb/>") == "<results/>");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(session->stale());  // the server closed it
  CHECK(logon == "EXCHANGE-LOGON 1 alice k");
  CHECK(hello == "EXCHANGE-SESSION 1");
  CHECK(first == "<a/>");
  CHECK(second == "<bb/>");
}

TEST_CASE("tls: a server certificate from another CA fails verification, clearly", "[tls]") {
  TestPki pki;
  TlsServer server({pki.stranger_cert, pki.stranger_key}, one_shot);
  auto o = tls_to(pki.ca_file);
  CHECK_THROWS_MATCHES(
      net::request_once(here(server.port()), "<create/>", o), net::NotSent,
      Catch::Message("TLS handshake with 127.0.0.1:" + std::to_string(server.port()) +
                     " failed: the server's certificate did not verify: unable to get local "
                     "issuer certificate"));
  CHECK(o.tls->counts().handshakes == 0);
}

TEST_CASE("tls: a certificate for another name fails verification", "[tls]") {
  TestPki pki;
  TlsServer server({pki.misnamed_cert, pki.misnamed_key}, one_shot);
  CHECK_THROWS_WITH(net::request_once(here(server.port()), "<create/>", tls_to(pki.ca_file)),
                    Catch::EndsWith("did not verify: IP address mismatch"));
  // The name the user dialled is what counts.
  TlsServer named({pki.server_cert, pki.server_key}, one_shot);
  auto local = net::Endpoint::resolve("localhost", named.port());
  CHECK(net::request_once(local, "<create/>", tls_to(pki.ca_file)) == kReply);
}

TEST_CASE("tls: a plaintext server is not taken for TLS", "[tls]") {
  TestPki pki;
  OneShotServer plain([](int fd) {
    write_str(fd, "<?xml version=\"1.0\"?>\n<results><error>bad length line</error></results>\n");
  });
  std::string why =
      not_sent([&] { net::request_once(here(plain.port()), "<create/>", tls_to(pki.ca_file)); });
  CHECK_THAT(why, Catch::StartsWith("TLS handshake with 127.0.0.1:"));
}

TEST_CASE("tls: sessions are resumed, and counted; --tls-resume off does not", "[tls]") {
  TestPki pki;
  for (int version : {0, TLS1_2_VERSION}) {
    for (bool resume : {true, false}) {
      CAPTURE(version, resume);
      TlsServer server({pki.server_cert, pki.server_key, "", version}, one_shot, 3);
      auto o = tls_to(pki.ca_file, resume);
      for (int i = 0; i < 3; ++i)
        CHECK(net::request_once(here(server.port()), "<create/>", o) == kReply);
      CHECK(o.tls->counts().handshakes == 3);
      CHECK(o.tls->counts().resumed == (resume ? 2u : 0u));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the server's counts
      CHECK(server.resumed() == (resume ? 2 : 0));
    }
  }
}

TEST_CASE("tls: --tls-max-version 1.2 offers TLS 1.2 only, and resumes by session id", "[tls]") {
  TestPki pki;
  std::atomic<int> versions_seen{0}, tls12{0};
  TlsServer server(
      {pki.server_cert, pki.server_key},  // the server would speak TLS 1.3
      [&](SSL* ssl, int fd) {
        ++versions_seen;
        if (SSL_version(ssl) == TLS1_2_VERSION) ++tls12;
        one_shot(ssl, fd);
      },
      3);
  net::TlsOptions t;
  t.enabled = true;
  t.ca_file = pki.ca_file;
  t.max_tls12 = true;
  net::ConnectOptions o(short_timeouts());
  o.tls = net::TlsClient::create(t);
  for (int i = 0; i < 3; ++i)
    CHECK(net::request_once(here(server.port()), "<create/>", o) == kReply);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the server's counts
  CHECK(versions_seen == 3);
  CHECK(tls12 == 3);
  CHECK(o.tls->counts().resumed == 2u);
  CHECK(server.resumed() == 2);
}

TEST_CASE("tls: threads share one context and its sessions", "[tls]") {
  TestPki pki;
  constexpr int kThreads = 4, kEach = 3;
  TlsServer server({pki.server_cert, pki.server_key}, one_shot, kThreads * kEach);
  auto o = tls_to(pki.ca_file);
  std::atomic<int> replies{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) try {
          if (net::request_once(here(server.port()), "<create/>", o) == kReply) ++replies;
        } catch (const std::exception&) {
        }
    });
  for (auto& t : threads) t.join();
  CHECK(replies == kThreads * kEach);
  CHECK(o.tls->counts().handshakes == kThreads * kEach);
  CHECK(o.tls->counts().resumed >= kEach);  // the first ones may all be full handshakes
}

TEST_CASE("tls: bench counts handshakes over its targets", "[tls][sessions]") {
  TestPki pki;
  TlsServer server({pki.server_cert, pki.server_key}, one_shot, 4);
  bench::Targets targets({{"127.0.0.1", server.port()}}, tls_to(pki.ca_file), false);
  targets.preflight();  // a handshake, no request
  bench::TimeBase tb;
  for (int i = 0; i < 3; ++i) CHECK(targets.exchange(0, "<create/>", tb).ok);
  CHECK(targets.tls_handshakes().handshakes == 4);
  CHECK(targets.tls_handshakes().resumed >= 2);  // the preflight may end before its ticket
}

TEST_CASE("tls: mutual TLS presents the client certificate", "[tls]") {
  TestPki pki;
  TlsServer server({pki.server_cert, pki.server_key, pki.ca_file}, one_shot, 2);
  auto o = tls_to(pki.ca_file);
  net::TlsOptions with_cert = o.tls->options();
  with_cert.cert_file = pki.client_cert;
  with_cert.key_file = pki.client_key;
  net::ConnectOptions alice(short_timeouts());
  alice.tls = net::TlsClient::create(with_cert);
  CHECK(net::request_once(here(server.port()), "<create/>", alice) == kReply);
  CHECK(server.client_cn() == "alice");
  // Without one, the server refuses in the handshake: nothing was sent to its application.
  std::string why = not_sent([&] { net::request_once(here(server.port()), "<create/>", o); });
  CHECK_THAT(why, Catch::Contains("the server refused the client certificate"));
  CHECK_THAT(why, Catch::Contains("certificate required"));
}

TEST_CASE("tls: files that cannot be loaded are named with OpenSSL's reason", "[tls]") {
  TestPki pki;
  net::TlsOptions t;
  t.enabled = true;
  t.ca_file = pki.dir + "/missing.pem";
  CHECK_THROWS_MATCHES(
      net::TlsClient::create(t), net::TlsSetupError,
      Catch::Message("cannot load --ca " + t.ca_file + ": No such file or directory"));
  t.ca_file = pki.ca_file;
  t.cert_file = pki.client_cert;
  t.key_file = pki.server_key;  // not its key
  CHECK_THROWS_WITH(net::TlsClient::create(t),
                    "cannot load --key " + pki.server_key + ": key values mismatch");
  t.key_file = pki.ca_file;  // not a key at all
  CHECK_THROWS_WITH(net::TlsClient::create(t),
                    Catch::StartsWith("cannot load --key " + pki.ca_file + ": "));
}
