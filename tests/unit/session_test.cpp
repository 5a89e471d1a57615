// net::Session, the connection state machine both drivers run: every socket event a peer can
// cause, at every stage, without a socket (the hostile-client suite does the same over real
// sockets, tests/e2e/hostile_clients_test.cpp).
#include "net/session.hpp"

#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "support/session_rules.hpp"

using net::Session;
using Kind = Session::Action::Kind;

namespace {

// A driver on paper: records what the session asks for and checks the rules every real driver
// relies on (tests/support/session_rules.hpp: one Send at a time, one Dispatch at a time,
// nothing after Close, ...); `sending`, `dispatched`, `deadline` and `closed` are theirs.
struct Driver : testing_support::SessionRules {
  explicit Driver(net::ConnectionLimits limits = {})
      : SessionRules(limits.max_request_bytes), session(limits) {
    session.started();
    drain();
  }

  void drain() {
    Session::Action a;
    while (session.next(a)) {
      const char* broken = take(a);  // the rule broken, shown if any
      REQUIRE(broken == nullptr);
      if (a.kind == Kind::Send) written += a.data;
      if (a.kind == Kind::Dispatch) requests.push_back(a.data);
      if (a.kind == Kind::StartDeadline) ++deadlines_started;
    }
    const char* broken = settled(session);
    REQUIRE(broken == nullptr);
  }

  void feed(const std::string& bytes) {
    session.received(bytes.data(), bytes.size());
    drain();
  }
  void write_done() {
    REQUIRE(sending);
    sent();
    session.sent();
    drain();
  }
  void reply(const std::string& xml) {
    REQUIRE(dispatched);
    answered();
    session.replied(xml);
    drain();
  }
  void eof() {
    session.peer_closed();
    drain();
  }
  void reset() {
    session.failed();
    drain();
  }
  void timeout() {
    REQUIRE(deadline);
    session.timed_out();
    drain();
  }
  void stop() {
    session.shutdown();
    drain();
  }

  Session session;
  std::string written;
  std::vector<std::string> requests;
  int deadlines_started = 0;
};

// What the server answers a session hello with.
const std::string kAccept = "EXCHANGE-SESSION 1 OK\n";

std::string frame(const std::string& payload) {
  return std::to_string(payload.size()) + "\n" + payload;
}

}  // namespace

TEST_CASE("one-shot connection: one request, its reply, then close", "[session]") {
  Driver d;
  CHECK(d.deadline);  // the wait for the request is bounded from the start
  CHECK(d.session.wants_read());
  d.feed(frame("<a/>") + frame("<b/>"));  // a second request on a one-shot connection is ignored
  REQUIRE(d.requests == std::vector<std::string>{"<a/>"});
  CHECK_FALSE(d.deadline);  // no deadline while the handler has it
  CHECK_FALSE(d.session.wants_read());
  d.reply("<results/>");
  CHECK(d.written == "<results/>");  // unframed without a session
  CHECK(d.deadline);                 // the write is bounded
  CHECK_FALSE(d.closed);
  d.write_done();
  CHECK(d.closed);
  CHECK(d.requests.size() == 1);
}

TEST_CASE("session: hello, pipelined requests answered in order, framed", "[session]") {
  Driver d;
  d.feed("EXCHANGE-SESSION 1\n" + frame("<a/>") + frame("<b/>"));
  CHECK(d.written == kAccept);                              // acknowledged before any reply
  REQUIRE(d.requests == std::vector<std::string>{"<a/>"});  // one at a time
  d.write_done();
  d.reply("<r1/>");
  REQUIRE(d.requests.size() == 2);  // the next request is framed once the reply is queued
  CHECK(d.written == kAccept + frame("<r1/>"));
  d.write_done();
  d.reply("<r2/>");
  d.write_done();
  CHECK(d.written == kAccept + frame("<r1/>") + frame("<r2/>"));
  CHECK_FALSE(d.closed);  // the session stays open
  CHECK(d.session.wants_read());
  CHECK(d.deadline);  // waiting for the next request, bounded
  d.eof();
  CHECK(d.closed);
}

TEST_CASE("reset right after the hello closes at once, no crash, nothing more", "[session]") {
  Driver d;
  d.feed("EXCHANGE-SESSION 1\n");
  REQUIRE(d.sending);
  d.reset();  // the acknowledgement's write fails: ECONNRESET
  CHECK(d.closed);
  d.session.sent();  // late events after Close change nothing
  d.session.replied("<late/>");
  d.session.timed_out();
  d.drain();
  CHECK_FALSE(d.session.wants_read());
}

TEST_CASE("reset while the request is with the handler: the late reply is dropped", "[session]") {
  Driver d;
  d.feed("EXCHANGE-SESSION 1\n" + frame("<a/>"));
  d.write_done();
  d.reset();
  CHECK(d.closed);
  d.session.replied("<r/>");
  Session::Action a;
  CHECK_FALSE(d.session.next(a));
}

TEST_CASE("EOF inside a request gets an error reply, then close", "[session]") {
  for (const char* partial : {"12", "EXCHANGE-SESSION 1\n5\n<a", "10\n<abc"}) {
    Driver d;
    d.feed(partial);
    if (d.sending) d.write_done();  // the hello's acknowledgement
    d.written.clear();
    d.eof();
    CHECK(d.written.find(net::session_errors::kClosedEarly) != std::string::npos);
    CHECK_FALSE(d.closed);  // the peer may still read: the error goes out first
    d.write_done();
    CHECK(d.closed);
  }
}

TEST_CASE("EOF between requests closes quietly; after a whole request the reply goes first",
          "[session]") {
  Driver idle;
  idle.eof();
  CHECK(idle.closed);
  CHECK(idle.written.empty());

  Driver d;  // half-close right after a whole one-shot request: the reply still goes out
  d.feed(frame("<a/>"));
  d.eof();
  REQUIRE_FALSE(d.closed);
  d.reply("<r/>");
  d.write_done();
  CHECK(d.written == "<r/>");
  CHECK(d.closed);
}

TEST_CASE("deadlines: mid-request gets an error, idle closes, a write that stalls closes",
          "[session]") {
  Driver mid;
  mid.feed("100\n<partial");
  mid.timeout();
  CHECK(mid.written.find(net::session_errors::kTimedOut) != std::string::npos);
  mid.timeout();  // the peer does not read the error either: closed at the write deadline
  CHECK(mid.closed);

  Driver idle;
  idle.timeout();
  CHECK(idle.closed);
  CHECK(idle.written.empty());

  Driver stalled;
  stalled.feed(frame("<a/>"));
  stalled.reply("<r/>");
  stalled.timeout();  // the reply's write never completes
  CHECK(stalled.closed);
}

TEST_CASE("each new wait gets a fresh deadline, the same wait does not", "[session]") {
  Driver d;
  int started = d.deadlines_started;
  d.feed("EXCHANGE-SESSION 1\n");  // a write starts: its own deadline
  CHECK(d.deadlines_started == started + 1);
  d.write_done();  // waiting for a request again
  CHECK(d.deadlines_started == started + 2);
  d.feed("5");
  d.feed("\n<a");  // trickling bytes do not extend the deadline
  CHECK(d.deadlines_started == started + 2);
}

TEST_CASE("a client that never reads: backpressure stops reading, the write deadline closes",
          "[session]") {
  net::ConnectionLimits limits;
  limits.max_unsent_bytes = 1000;
  Driver d(limits);
  d.feed("EXCHANGE-SESSION 1\n");
  std::string big(600, 'x');
  int answered = 0;
  // The peer keeps sending requests and never reads: the acknowledgement's write never ends.
  for (int i = 0; i < 10 && d.session.wants_read(); ++i) {
    d.feed(frame("<q/>"));
    if (d.dispatched) {
      d.reply(big);
      ++answered;
    }
  }
  CHECK_FALSE(d.session.wants_read());  // bounded: stops reading...
  CHECK(answered <= 3);                 // ...after at most the bound plus one reply
  d.timeout();
  CHECK(d.closed);
}

TEST_CASE("garbage instead of the hello or a length gets an error, then close", "[session]") {
  for (std::string garbage :
       {std::string("EXCHANGE-SESSION 2\n"), std::string("GET / HTTP/1.1\r\n"),
        std::string("\0\xff\x01\n", 4), std::string(100, 'x')}) {
    Driver d;
    d.feed(garbage);
    CHECK(d.requests.empty());
    CHECK(d.written.find("<error>Bad framing") != std::string::npos);
    d.write_done();
    CHECK(d.closed);
  }
  Driver binary;  // bytes that are not text are shown escaped, so the reply stays XML
  binary.feed(std::string("\x16\x03\x01\x00\xff\xfe\n", 7));
  CHECK(binary.written.find("got '\\x16\\x03\\x01\\x00\\xff\\xfe'") != std::string::npos);
  Driver too_long;
  too_long.feed("99999999999\n");
  CHECK(too_long.written.find("exceeds the limit") != std::string::npos);
}

TEST_CASE("shutdown: idle closes now, a request in flight is answered first", "[session]") {
  Driver idle;
  idle.feed("EXCHANGE-SESSION 1\n");
  idle.write_done();
  idle.stop();
  CHECK(idle.closed);

  Driver busy;
  busy.feed("EXCHANGE-SESSION 1\n" + frame("<a/>") + frame("<b/>"));
  busy.write_done();
  busy.stop();
  CHECK_FALSE(busy.closed);
  busy.reply("<r/>");
  busy.write_done();
  CHECK(busy.closed);
  CHECK(busy.requests.size() == 1);  // the buffered second request is not started
}

// ---- the budget across connections (limits.budget, --max-buffered-bytes) ----

namespace {

net::ConnectionLimits with_budget(std::size_t bytes) {
  net::ConnectionLimits limits;
  limits.budget = std::make_shared<net::BufferBudget>(bytes);
  return limits;
}

bool refused_for_budget(const Driver& d) {
  return d.written.find(net::session_errors::kBuffersFull) != std::string::npos;
}

}  // namespace

TEST_CASE("budget: a session charges exactly what it holds, and nothing once it is done",
          "[session][budget]") {
  auto limits = with_budget(1 << 20);
  auto& budget = *limits.budget;
  Driver d(limits);
  d.feed("EXCHANGE-SESSION 1\n");
  CHECK(budget.used() == kAccept.size());  // the acknowledgement being written
  d.write_done();
  CHECK(budget.used() == 0);
  const std::string payload(100, 'p');
  d.feed("100\n" + payload.substr(0, 30));
  CHECK(budget.used() == 34);  // the input so far
  d.feed(payload.substr(30));
  REQUIRE(d.requests.size() == 1);
  CHECK(budget.used() == 100);  // the request, while the handler has it
  d.reply("<r/>");
  CHECK(budget.used() == frame("<r/>").size());  // the reply, until it is written
  CHECK(d.session.charged() == budget.used());
  d.write_done();
  CHECK(budget.used() == 0);
  d.eof();
  CHECK(d.closed);
  CHECK(budget.used() == 0);
}

TEST_CASE("budget: every way a session ends gives back all it held", "[session][budget]") {
  auto limits = with_budget(1 << 20);
  auto& budget = *limits.budget;
  {
    Driver reset(limits);  // reset inside a request
    reset.feed("1000\n<partial");
    CHECK(budget.used() > 0);
    reset.reset();
    CHECK(budget.used() == 0);
  }
  {
    Driver reset_writing(limits);  // reset while a reply is being written
    reset_writing.feed(frame("<a/>"));
    reset_writing.reply(std::string(5000, 'r'));
    CHECK(budget.used() == 5000);
    reset_writing.reset();
    CHECK(budget.used() == 0);
  }
  {
    Driver eof(limits);  // EOF inside a request: the error is written, then close
    eof.feed("1000\n<partial");
    eof.eof();
    CHECK(budget.used() == eof.session.charged());  // only the error now
    eof.write_done();
    CHECK(eof.closed);
    CHECK(budget.used() == 0);
  }
  {
    Driver stalled(limits);  // a peer that never reads: the write deadline
    stalled.feed(frame("<a/>"));
    stalled.reply(std::string(5000, 'r'));
    stalled.timeout();
    CHECK(stalled.closed);
    CHECK(budget.used() == 0);
  }
  {
    Driver stopping(limits);  // shutdown with a request in flight: its reply, then close
    stopping.feed("EXCHANGE-SESSION 1\n" + frame("<a/>") + "5\n<b");
    stopping.write_done();
    stopping.stop();
    stopping.reply("<r/>");
    stopping.write_done();
    CHECK(stopping.closed);
    CHECK(budget.used() == 0);
  }
  {
    Driver late(limits);  // reset while the handler runs: the late reply is not charged
    late.feed(frame("<a/>"));
    late.reset();
    late.session.replied(std::string(5000, 'r'));
    CHECK(budget.used() == 0);
  }
  {
    // Destroyed while holding bytes (an exception unwinding a driver): given back too.
    Driver dropped(limits);
    dropped.feed("EXCHANGE-SESSION 1\n" + frame("<a/>") + "1000\n<partial");
    CHECK(budget.used() > 0);
  }
  CHECK(budget.used() == 0);
}

TEST_CASE(
    "budget: input beyond the allowance is taken only while the budget has room; otherwise "
    "'Server busy' names the flag, nothing is dispatched, and the connection closes",
    "[session][budget]") {
  auto limits = with_budget(1000);
  limits.unbudgeted_input_bytes = 100;
  auto& budget = *limits.budget;
  budget.charge(900);                                        // what other connections hold
  const std::string head = "2000\n" + std::string(80, 'x');  // 85 bytes: within the allowance

  Driver d(limits);
  d.feed(head);
  CHECK_FALSE(refused_for_budget(d));
  CHECK(budget.used() == 985);
  d.feed(std::string(100, 'x'));  // 85 beyond the allowance do not fit
  CHECK(refused_for_budget(d));
  CHECK(d.requests.empty());
  CHECK(budget.refusals() == 1);
  CHECK_FALSE(d.session.wants_read());
  d.write_done();
  CHECK(d.closed);
  CHECK(budget.used() == 900);

  auto roomier = limits;  // with room, the same request is taken whole
  roomier.budget = std::make_shared<net::BufferBudget>(3000);
  Driver roomy(roomier);
  roomy.feed(head);
  roomy.feed(std::string(1920, 'x'));
  CHECK_FALSE(refused_for_budget(roomy));
  CHECK(roomy.requests.size() == 1);
}

TEST_CASE("budget: while it is exhausted a small request is served and a larger one refused",
          "[session][budget]") {
  auto limits = with_budget(1000);
  limits.budget->charge(5000);  // other connections' replies, unread
  Driver small(limits);
  small.feed(frame(std::string(limits.small_request_bytes, 's')));
  REQUIRE(small.requests.size() == 1);
  small.reply("<r/>");
  small.write_done();
  CHECK(small.written == "<r/>");

  Driver large(limits);  // within the input allowance, but over the small-request size
  large.feed(frame(std::string(limits.small_request_bytes + 1, 'l')));
  CHECK(large.requests.empty());
  CHECK(refused_for_budget(large));
  large.write_done();
  CHECK(large.closed);
  CHECK(limits.budget->used() == 5000);
}

TEST_CASE(
    "budget: while it is exhausted a session with replies unwritten frames nothing more and "
    "stops reading, until its peer reads or the write deadline closes it; readers go on",
    "[session][budget]") {
  auto limits = with_budget(1000);
  auto& budget = *limits.budget;
  // A non-reader: its first reply (2000 bytes) exhausts the budget and is never written.
  Driver non_reader(limits);
  non_reader.feed(frame("<q1/>"));
  non_reader.reply(std::string(2000, 'r'));
  CHECK(budget.exhausted());

  Driver slow(limits);  // a session whose reader lags: stalled while its reply is unwritten
  slow.feed("EXCHANGE-SESSION 1\n");
  slow.write_done();
  slow.feed(frame("<a/>") + frame("<b/>"));
  slow.reply("<ra/>");
  CHECK(slow.requests.size() == 1);  // <b/> waits: the reply to <a/> is still unwritten
  CHECK_FALSE(slow.session.wants_read());
  slow.write_done();                 // the peer read it
  CHECK(slow.requests.size() == 2);  // so <b/> goes on, even with the budget still exhausted
  slow.reply("<rb/>");
  slow.write_done();
  CHECK(slow.session.wants_read());

  Driver reader(limits);  // a reader arriving now is served request after request
  reader.feed("EXCHANGE-SESSION 1\n");
  reader.write_done();
  for (int i = 0; i < 3; ++i) {
    reader.feed(frame("<q/>"));
    REQUIRE(reader.requests.size() == static_cast<std::size_t>(i + 1));
    reader.reply("<r/>");
    reader.write_done();
  }

  non_reader.timeout();  // the write deadline
  CHECK(non_reader.closed);
  CHECK_FALSE(budget.exhausted());
  CHECK(budget.used() == 0);
}

TEST_CASE(
    "budget: a request over the small size is taken only with room for its largest reply, "
    "reserved until the reply replaces it; alone it is always taken",
    "[session][budget]") {
  auto limits = with_budget(100000);
  limits.reply_bound = {64, 4096, 1 << 20};  // 64x the request, at least 4 KiB, at most 1 MiB
  auto& budget = *limits.budget;
  const std::string request = frame(std::string(2000, 'q'));  // may get a 128,000-byte reply
  const std::size_t request_bytes = 2000;

  // Alone: taken although request and reply (130,000) exceed the budget.
  Driver alone(limits);
  alone.feed(request);
  REQUIRE(alone.requests.size() == 1);
  CHECK(budget.used() == request_bytes + 64 * request_bytes);
  alone.reply("<r/>");  // the real reply replaces the reservation
  CHECK(budget.used() == 4);
  alone.write_done();
  CHECK(budget.used() == 0);

  // With 50,000 bytes held elsewhere, the same request does not fit: refused, nothing held.
  budget.charge(50000);
  Driver crowded(limits);
  crowded.feed(request);
  CHECK(crowded.requests.empty());
  CHECK(refused_for_budget(crowded));
  crowded.write_done();
  CHECK(budget.used() == 50000);

  // A small request is taken anyway: its reply is small.
  Driver small(limits);
  small.feed(frame("<s/>"));
  CHECK(small.requests.size() == 1);
  small.reply("<r/>");
  small.write_done();
  CHECK(budget.used() == 50000);
}

TEST_CASE("auth off: pending until a request is dispatched, then authenticated for good",
          "[session][slots]") {
  Driver d;
  CHECK_FALSE(d.session.authenticated());  // accepted: not yet
  d.feed("EXCHANGE-SESSION 1\n");
  d.write_done();
  CHECK_FALSE(d.session.authenticated());  // a hello is not a request
  d.feed("9\n<a/>");
  CHECK_FALSE(d.session.authenticated());  // part of one is not either
  d.feed("12345");
  REQUIRE(d.requests.size() == 1);
  CHECK(d.session.authenticated());
  d.reply("<r/>");
  d.write_done();
  CHECK(d.session.authenticated());
  d.eof();
  CHECK(d.session.authenticated());

  Driver garbage;
  garbage.feed("GET / HTTP/1.1\r\n\r\n");  // refused before any request: never authenticated
  garbage.write_done();
  CHECK(garbage.closed);
  CHECK_FALSE(garbage.session.authenticated());
}
