// libFuzzer target: the connection state machine (net::Session) driven by random byte chunks
// interleaved with random socket events (EOF, reset, timeout, write done, reply, shutdown),
// as a hostile peer and an unlucky network can order them. It must never crash, and it must
// keep the rules the drivers rely on (tests/support/session_rules.hpp, which the unit test
// checks too: one Send at a time, one Dispatch at a time, no request over the size limit,
// nothing after Close, no reading once closed) and bounded output; and
// the buffer budget's: the session's charge is always exactly what it holds (the budget
// counts nothing else but a fixed charge standing for other connections), nothing once
// closed, and nothing at all once the session is gone.
//
// The input also picks authentication (limits.auth, an auth::Gate over a small principals file
// written once): on or off, a loopback peer or not, TLS or not, a certificate name (listed,
// unlisted, none), and failed logons before the connection (the throttle). With it on, nothing
// is dispatched without a principal, and the principal is the one a reference model expects:
// the certificate's listed name, or "bot" after a well-formed first line with its key from a
// peer allowed to use a key. The key never appears in anything sent.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "auth/gate.hpp"
#include "net/buffer_budget.hpp"
#include "net/session.hpp"
#include "support/session_rules.hpp"
#include "util/log.hpp"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

// The key of principal "bot". DEL inside: a reply that quotes a line shows it as \x7f, so the
// raw key in anything sent can only be the key leaking.
const std::string kKey = "fz\x7fkey";
const std::string kLogonPrefix = "EXCHANGE-LOGON";
// The certificate names a connection may present: listed with a key, listed without one,
// unlisted, a listed one with a NUL after it (names no one), none.
const char* const kCertificates[] = {"bot", "desk", "mallory", "desk\0", ""};
const std::size_t kCertificateSizes[] = {3, 4, 7, 5, 0};

// The principals file, written once per process and removed at its exit.
struct PrincipalsFile {
  std::string path = "/tmp/fuzz_session_principals." + std::to_string(::getpid()) + ".txt";
  PrincipalsFile() {
    std::ofstream(path) << "bot trade * " << auth::to_hex(auth::sha256(kKey))
                        << "\ndesk trade 1001 -\n";
    util::set_log_level(util::LogLevel::error);  // refusals are logged as warnings
  }
  ~PrincipalsFile() { ::unlink(path.c_str()); }
};

const std::string& principals_path() {
  static const PrincipalsFile file;
  return file.path;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 6) return 0;
  net::ConnectionLimits limits;
  limits.max_request_bytes = 1 + data[0] * 4;
  limits.max_unsent_bytes = 1 + data[1] * 8;
  // A budget as small as a few bytes (so every rule of it is reached), with a charge of other
  // connections' that sometimes exhausts it from the start.
  auto budget = std::make_shared<net::BufferBudget>(1 + data[2] * 16);
  const std::size_t others = static_cast<std::size_t>(data[3]) * 8;
  budget->charge(others);
  limits.budget = budget;
  limits.unbudgeted_input_bytes = 1 + data[2] % 64;
  limits.small_request_bytes = data[3] % 32;

  // Authentication, from data[4] and data[5].
  const bool auth_on = data[4] & 1;
  auth::Peer peer;
  peer.loopback = data[4] & 2;
  peer.tls = data[4] & 4;
  peer.ip = peer.loopback ? "127.0.0.1" : "192.0.2.7";
  peer.address = peer.ip + ":4000";
  const std::size_t cert = (data[4] >> 3) % 5;
  const std::string certificate(kCertificates[cert], kCertificateSizes[cert]);
  const unsigned max_failures = data[4] >> 6;  // 0: never locks out
  const unsigned failed_before = data[5] % 5;
  std::shared_ptr<auth::Gate> gate;
  if (auth_on) {
    auth::Gate::Options options;
    options.principals_path = principals_path();
    options.throttle.max_failures = max_failures;
    gate = std::make_shared<auth::Gate>(options);  // a fresh throttle for each input
    for (unsigned i = 0; i < failed_before; ++i) gate->logon(peer, "bot", "wrong");
    limits.auth = gate;
  }
  const bool locked_out = max_failures > 0 && failed_before >= max_failures;
  const bool key_allowed = (peer.tls || peer.loopback) && !locked_out;
  const bool certificate_listed = certificate == "bot" || certificate == "desk";
  data += 6;
  size -= 6;

  auto owned = std::make_unique<net::Session>(limits, peer);
  net::Session& session = *owned;
  testing_support::SessionRules rules(limits.max_request_bytes);
  std::string fed;                // every byte the session was given
  std::size_t pending_bytes = 0;  // Sent out by the session, not yet written
  auto check_dispatch = [&] {
    const std::string& principal = session.principal();
    if (!auth_on) return check(principal.empty());
    check(!principal.empty());
    if (starts_with(fed, kLogonPrefix)) {
      // Only a right logon line, first, from a peer that may use a key, gives a principal.
      const std::string line = "EXCHANGE-LOGON 1 bot " + kKey;
      check(principal == "bot" && key_allowed &&
            (starts_with(fed, line + "\n") || starts_with(fed, line + "\r\n")));
    } else {
      check(certificate_listed && principal == certificate);
    }
  };
  auto drain = [&] {
    net::Session::Action a;
    while (session.next(a)) {
      check(rules.take(a) == nullptr);
      if (a.kind == net::Session::Action::Kind::Send) {
        pending_bytes = a.data.size();
        check(a.data.find(kKey) == std::string::npos);
      }
      if (a.kind == net::Session::Action::Kind::Dispatch) check_dispatch();
    }
    check(rules.settled(session) == nullptr);
    check(budget->used() == others + session.charged());
  };

  session.started(certificate);
  drain();
  std::size_t pos = 0;
  while (pos < size && !rules.closed) {
    std::uint8_t op = data[pos++];
    switch (op % 8) {
      case 0:
      case 1:
      case 2: {  // bytes: the next (op / 8 + 1) of the input
        std::size_t n = std::min<std::size_t>(op / 8 + 1, size - pos);
        if (session.wants_read()) {
          fed.append(reinterpret_cast<const char*>(data) + pos, n);
          session.received(reinterpret_cast<const char*>(data) + pos, n);
        }
        pos += n;
        break;
      }
      case 3:
        if (rules.sending) {
          rules.sent();
          session.sent();
        }
        break;
      case 4:
        if (rules.dispatched) {
          rules.answered();
          // A reply whose size comes from the op, so some exceed the output bound.
          session.replied(std::string(static_cast<std::size_t>(op) * 7, 'r'));
        }
        break;
      case 5:
        if (op & 0x80)
          session.failed();
        else
          session.peer_closed();
        break;
      case 6:
        session.timed_out();
        break;
      case 7:
        session.shutdown();
        break;
    }
    drain();
    // Output is bounded: what is queued beyond the Send in flight never exceeds the bound by
    // more than one reply (255 * 7 here) and one error or acknowledgement.
    check(pending_bytes <= limits.max_unsent_bytes + 255 * 7 + 4096);
  }
  owned.reset();  // however it ended, or did not: everything charged comes back
  check(budget->used() == others);
  return 0;
}
