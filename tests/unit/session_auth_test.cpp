// net::Session with authentication on (limits.auth): the logon line, certificates, and what a
// connection without a principal gets, without a socket. The same over real sockets and TLS:
// tests/e2e/auth_test.cpp.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "auth/gate.hpp"
#include "net/session.hpp"
#include "support/session_rules.hpp"

using net::Session;
using Kind = Session::Action::Kind;

namespace {

const std::string kOk = "EXCHANGE-LOGON 1 OK\n";

std::string frame(const std::string& payload) {
  return std::to_string(payload.size()) + "\n" + payload;
}

// A principals file of two principals: bot-7 (trade for 1003, key "secret") and desk-a (trade for
// 1001, certificate only).
struct Principals {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("session_auth." + std::to_string(::getpid()) + ".txt"))
                         .string();
  std::shared_ptr<auth::Gate> gate;
  Principals() {
    std::ofstream(path) << "bot-7 trade 1003 " << auth::to_hex(auth::sha256("secret")) << "\n"
                        << "desk-a trade 1001 -\n";
    auth::Gate::Options options;
    options.principals_path = path;
    options.throttle.max_failures = 2;
    gate = std::make_shared<auth::Gate>(options);
  }
  ~Principals() { std::filesystem::remove(path); }
};

auth::Peer loopback() { return {"127.0.0.1:40000", "127.0.0.1", true, false}; }
auth::Peer remote(bool tls) { return {"10.1.2.3:40000", "10.1.2.3", false, tls}; }

// Records what the session asks for, checking the rules every driver relies on.
struct Driver : testing_support::SessionRules {
  Driver(std::shared_ptr<auth::Gate> gate, auth::Peer peer, std::string certificate = {})
      : SessionRules(net::ConnectionLimits{}.max_request_bytes),
        session(limits(std::move(gate)), std::move(peer)) {
    session.started(std::move(certificate));
    drain();
  }
  static net::ConnectionLimits limits(std::shared_ptr<auth::Gate> gate) {
    net::ConnectionLimits l;
    l.auth = std::move(gate);
    return l;
  }
  void drain() {
    Session::Action a;
    while (session.next(a)) {
      REQUIRE(take(a) == nullptr);
      if (a.kind == Kind::Send) written += a.data;
      if (a.kind == Kind::Dispatch) requests.push_back({a.data, session.principal()});
    }
    REQUIRE(settled(session) == nullptr);
    while (sending) {
      sent();
      session.sent();
      drain();
    }
  }
  void feed(const std::string& bytes) {
    session.received(bytes.data(), bytes.size());
    drain();
  }
  void reply(const std::string& xml) {
    answered();
    session.replied(xml);
    drain();
  }
  struct Dispatched {
    std::string payload, principal;
  };
  Session session;
  std::string written;
  std::vector<Dispatched> requests;
};

}  // namespace

TEST_CASE("auth on: a request without a principal gets one error and the connection closes",
          "[session][auth]") {
  Principals p;
  Driver d(p.gate, loopback());
  d.feed(frame("<transactions id=\"1003\"><query id=\"1\"/></transactions>"));
  CHECK(d.requests.empty());
  CHECK(d.written.find("Not authenticated") != std::string::npos);
  CHECK(d.closed);
  CHECK(p.gate->refusals()[static_cast<int>(auth::Refusal::NotAuthenticated)] == 1);
}

TEST_CASE("a key logon on loopback is answered first; the request carries the principal",
          "[session][auth]") {
  Principals p;
  Driver d(p.gate, loopback());
  d.feed("EXCHANGE-LOGON 1 bot-7 secret\n" + frame("<a/>"));
  REQUIRE(d.requests.size() == 1);
  CHECK(d.requests[0].payload == "<a/>");
  CHECK(d.requests[0].principal == "bot-7");
  d.reply("<results/>");
  CHECK(d.written == kOk + "<results/>");
  CHECK(d.closed);  // one-shot: closes after its reply
}

TEST_CASE("a logon, then a persistent session", "[session][auth]") {
  Principals p;
  Driver d(p.gate, loopback());
  d.feed("EXCHANGE-LOGON 1 bot-7 secret\nEXCHANGE-SESSION 1\n" + frame("<a/>"));
  REQUIRE(d.requests.size() == 1);
  d.reply("<r1/>");
  d.feed(frame("<b/>"));
  REQUIRE(d.requests.size() == 2);
  CHECK(d.requests[1].principal == "bot-7");
  d.reply("<r2/>");
  CHECK(d.written == kOk + "EXCHANGE-SESSION 1 OK\n" + frame("<r1/>") + frame("<r2/>"));
  CHECK_FALSE(d.closed);
}

TEST_CASE("a wrong key, an unknown name or a malformed line is refused, nothing dispatched",
          "[session][auth]") {
  Principals p;
  for (const std::string line :
       {"EXCHANGE-LOGON 1 bot-7 wrong", "EXCHANGE-LOGON 1 nobody secret",
        "EXCHANGE-LOGON 1 desk-a secret", "EXCHANGE-LOGON 1 bot-7",
        "EXCHANGE-LOGON 1 bot-7 secret extra", "EXCHANGE-LOGON 2 bot-7 secret",
        "EXCHANGE-LOGONX 1 bot-7 secret", "EXCHANGE-LOGON 1  bot-7 secret"}) {
    CAPTURE(line);
    Driver d(p.gate, remote(true));
    d.feed(line + "\n" + frame("<a/>"));
    CHECK(d.requests.empty());
    CHECK(d.written.rfind("EXCHANGE-LOGON 1 REFUSED ", 0) == 0);
    CHECK(d.written.find("secret") == std::string::npos);  // never echoed
    CHECK(d.closed);
  }
}

TEST_CASE("a key over plaintext from another machine is refused even when right",
          "[session][auth]") {
  Principals p;
  Driver d(p.gate, remote(false));
  d.feed("EXCHANGE-LOGON 1 bot-7 secret\n" + frame("<a/>"));
  CHECK(d.requests.empty());
  CHECK(d.written ==
        "EXCHANGE-LOGON 1 REFUSED " + std::string(net::session_errors::kLogonNeedsTls) + "\n");
  CHECK(p.gate->refusals()[static_cast<int>(auth::Refusal::KeyNeedsTls)] == 1);
}

TEST_CASE("repeated failures lock the address out, even for the right key", "[session][auth]") {
  Principals p;  // locks after 2 failures
  for (int i = 0; i < 2; ++i) Driver(p.gate, remote(true)).feed("EXCHANGE-LOGON 1 bot-7 x\n");
  Driver d(p.gate, remote(true));
  d.feed("EXCHANGE-LOGON 1 bot-7 secret\n");
  CHECK(d.written ==
        "EXCHANGE-LOGON 1 REFUSED " + std::string(net::session_errors::kLogonLockedOut) + "\n");
  Driver other(p.gate, loopback());  // another address is not affected
  other.feed("EXCHANGE-LOGON 1 bot-7 secret\n");
  CHECK(other.written == kOk);
}

TEST_CASE("a verified certificate of a listed name is the principal; an unlisted one is not",
          "[session][auth]") {
  Principals p;
  Driver listed(p.gate, remote(true), "desk-a");
  listed.feed(frame("<a/>"));
  REQUIRE(listed.requests.size() == 1);
  CHECK(listed.requests[0].principal == "desk-a");

  Driver unlisted(p.gate, remote(true), "mallory");
  unlisted.feed(frame("<a/>"));
  CHECK(unlisted.requests.empty());
  CHECK(unlisted.written.find("not a principal") != std::string::npos);
  CHECK(p.gate->refusals()[static_cast<int>(auth::Refusal::UnknownCertificate)] == 1);
}

TEST_CASE("a logon line over 512 bytes is refused, whole or not", "[session][auth]") {
  Principals p;
  const std::string long_line = "EXCHANGE-LOGON 1 bot-7 " + std::string(600, 'k');
  for (const std::string& bytes : {long_line + "\n", long_line}) {
    Driver d(p.gate, loopback());
    d.feed(bytes + frame("<a/>"));
    CHECK(d.requests.empty());
    CHECK(d.written.find("longer than 512 bytes") != std::string::npos);
    CHECK(d.written.find("kkkk") == std::string::npos);
    CHECK(d.closed);
  }
}

TEST_CASE("the logon line only comes first; auth off refuses one", "[session][auth]") {
  Principals p;
  Driver late(p.gate, loopback());
  late.feed("EXCHANGE-SESSION 1\nEXCHANGE-LOGON 1 bot-7 secret\n");
  CHECK(late.written.find("must be the connection's first line") != std::string::npos);
  CHECK(late.written.find("secret") == std::string::npos);
  CHECK(late.closed);

  Driver off(nullptr, loopback());
  off.feed("EXCHANGE-LOGON 1 bot-7 secret\n" + frame("<a/>"));
  CHECK(off.requests.empty());
  CHECK(off.written.find("authentication is off") != std::string::npos);

  Driver open(nullptr, loopback());  // and without one, everything as before
  open.feed(frame("<a/>"));
  REQUIRE(open.requests.size() == 1);
  CHECK(open.requests[0].principal.empty());
}

// Issue 47: on 6f484b8 a session logged on with a replaced key went on, and a name removed and
// added again revived the sessions it had before.
TEST_CASE("a changed key or a removal ends a session at its next request, never revived",
          "[session][auth]") {
  Principals p;
  const auto rewrite = [&](const std::string& text) {
    std::ofstream(p.path) << text;
    REQUIRE(p.gate->reload());
  };
  const std::string bot = "bot-7 trade 1003 " + auth::to_hex(auth::sha256("secret")) + "\n";
  const std::string desk = "desk-a trade 1001 -\n";
  const auto ended = [&](Driver& d) {
    d.feed(frame("<b/>"));
    CHECK(d.requests.size() == 1);
    CHECK(d.written.find(net::session_errors::kSessionEnded) != std::string::npos);
    CHECK(d.closed);
  };
  const auto logged_on = [&] {
    auto d = std::make_unique<Driver>(p.gate, loopback());
    d->feed("EXCHANGE-LOGON 1 bot-7 secret\nEXCHANGE-SESSION 1\n" + frame("<a/>"));
    REQUIRE(d->requests.size() == 1);
    d->reply("<r1/>");
    return d;
  };

  SECTION("a new key") {
    auto d = logged_on();
    rewrite("bot-7 trade 1003 " + auth::to_hex(auth::sha256("rotated")) + "\n" + desk);
    ended(*d);
    CHECK(p.gate->refusals()[static_cast<int>(auth::Refusal::SessionEnded)] == 1);
  }
  SECTION("removed, then added again with the same key") {
    auto d = logged_on();
    rewrite(desk);
    rewrite(bot + desk);
    ended(*d);
  }
  SECTION("roles and accounts changed: the session goes on, the handler checks each request") {
    auto d = logged_on();
    rewrite("bot-7 trade,admin 1003,1004 " + auth::to_hex(auth::sha256("secret")) + "\n" + desk);
    d->feed(frame("<b/>"));
    CHECK(d->requests.size() == 2);
    CHECK_FALSE(d->closed);
  }
  SECTION("the same file read again changes nothing") {
    auto d = logged_on();
    rewrite(bot + desk);
    d->feed(frame("<b/>"));
    CHECK(d->requests.size() == 2);
  }
  SECTION("a certificate's name removed and added again") {
    Driver d(p.gate, remote(true), "desk-a");
    d.feed("EXCHANGE-SESSION 1\n" + frame("<a/>"));
    REQUIRE(d.requests.size() == 1);
    d.reply("<r1/>");
    rewrite(bot);
    rewrite(bot + desk);
    ended(d);
  }
}

TEST_CASE("the generation a session logged on with goes with its requests", "[session][auth]") {
  Principals p;
  Driver d(p.gate, loopback());
  d.feed("EXCHANGE-LOGON 1 bot-7 secret\n");
  const auto generation = p.gate->generation_of("bot-7");
  REQUIRE(generation.has_value());
  CHECK(d.session.generation() == *generation);
  CHECK(p.gate->current("bot-7", *generation));
  CHECK_FALSE(p.gate->current("bot-7", *generation + 1));
  CHECK(p.gate->generation_of("desk-a") != generation);
}

TEST_CASE("auth on: authenticated once it has a principal, and only then",
          "[session][auth][slots]") {
  Principals p;
  Driver listed(p.gate, remote(true), "desk-a");
  CHECK(listed.session.authenticated());  // at started(): the certificate names a principal

  Driver unlisted(p.gate, remote(true), "mallory");
  CHECK_FALSE(unlisted.session.authenticated());

  Driver logon(p.gate, loopback());
  CHECK_FALSE(logon.session.authenticated());
  logon.feed("EXCHANGE-SESSION 1\n");
  CHECK_FALSE(logon.session.authenticated());  // a hello alone authenticates nobody
  Driver key(p.gate, loopback());
  key.feed("EXCHANGE-LOGON 1 bot-7 secret\n");
  CHECK(key.session.authenticated());  // before any request

  Driver wrong(p.gate, remote(true));
  wrong.feed("EXCHANGE-LOGON 1 bot-7 not-it\n" + frame("<a/>"));
  CHECK_FALSE(wrong.session.authenticated());
  CHECK(wrong.closed);

  Driver nobody(p.gate, loopback());
  nobody.feed(frame("<a/>"));  // a request is no authentication when auth is on
  CHECK(nobody.requests.empty());
  CHECK_FALSE(nobody.session.authenticated());
}
