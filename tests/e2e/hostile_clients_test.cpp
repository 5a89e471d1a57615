// Hostile clients against the real server binary over real sockets, for every concurrency
// model: resets (SO_LINGER 0) and half-closes at every stage of a connection, a reset while a
// large reply is being written, a session that never reads its replies, garbage instead of the
// session hello, and thousands of such connections at once. No client may take the exchange
// down, so after each kind the same server process must still be alive and answer a normal
// client correctly, and what it acknowledged must still be there. With TLS and --principals:
// garbage where the ClientHello belongs, handshakes cut or stalled at every stage (TLS 1.3 and
// 1.2), and the logon line abused (too long, unfinished, control bytes in the name, repeated,
// after the hello, a thousand wrong keys from one address).
//
// One server per model serves every kind in turn (starting one per kind would make the file
// take minutes); --read-timeout-ms is short so the kinds that end in a timeout end quickly.
// Time is asserted only as generous correctness bounds (a connection closed at all, a normal
// request answered at all), never as performance: the machine may be slow and shared.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "auth/key.hpp"
#include "support/admin_scrape.hpp"
#include "support/checks.hpp"
#include "support/raw_client.hpp"
#include "support/reply_xml.hpp"
#include "support/server_process.hpp"
#include "support/staged_tls_client.hpp"
#include "support/test_database.hpp"
#include "support/test_pki.hpp"
#include "support/tls_client.hpp"
#include "support/wire_client.hpp"

using namespace testing_support;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

constexpr int kReadTimeoutMs = 1000;
const std::string kHello = "EXCHANGE-SESSION 1\n";
const std::string kAccept = "EXCHANGE-SESSION 1 OK\n";
const std::string kDecl = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
// The executions behind the large reply: one buy filled by this many one-share sells, so each
// <query> of it answers with this many <executed> elements (about 3 KB).
constexpr int kFills = 60;
// Queries in the large request: a reply of over a megabyte, more than the loopback socket
// buffers take at once, so the server is still writing it when the client resets.
constexpr int kLargeQueries = 400;

// Bytes as C-style escapes where not printable ASCII, for failure messages.
std::string printable(const std::string& bytes) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char ch : bytes) {
    if (ch >= 0x20 && ch < 0x7f) {
      out += static_cast<char>(ch);
    } else if (ch == '\n') {
      out += "\\n";
    } else {
      out += "\\x";
      out += hex[ch >> 4];
      out += hex[ch & 15];
    }
  }
  return out;
}

bool is_single_error(const std::string& reply) {
  std::string why = single_error(reply);
  return !why.empty() && why[0] != '(';
}

// A session reply, "M\n" + M bytes, split off the front of `bytes`; empty if incomplete.
std::string take_framed(std::string& bytes) {
  auto nl = bytes.find('\n');
  if (nl == std::string::npos) return {};
  std::size_t size = std::stoul(bytes.substr(0, nl));
  if (bytes.size() < nl + 1 + size) return {};
  std::string xml = bytes.substr(nl + 1, size);
  bytes.erase(0, nl + 1 + size);
  return xml;
}

// Whether the server (the only child of this process) has exited, without reaping it, so
// ServerProcess still collects its status; `how` says how it died.
bool server_exited(std::string& how) {
  siginfo_t info;
  std::memset(&info, 0, sizeof info);
  if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) return false;
  how = info.si_code == CLD_EXITED ? "exited with " + std::to_string(info.si_status)
                                   : "killed by signal " + std::to_string(info.si_status) + " (" +
                                         ::strsignal(info.si_status) + ")";
  return true;
}

// The state one model's run shares across kinds: one server, a seller (1) and a buyer (2), a
// buy with kFills executions behind the large reply, and the orders the server acknowledged.
class Exchange {
 public:
  explicit Exchange(const std::string& model)
      // The large reply (~1.3 MB for a ~10 KB request) is what these clients refuse to read,
      // so the reply budget (64 times the request by default) is raised for it.
      : server_({"--concurrency", model, "--threads", "2", "--reset", "--read-timeout-ms",
                 std::to_string(kReadTimeoutMs), "--max-reply-ratio", "1000"}) {}

  unsigned short port() const { return server_.port(); }
  ServerProcess& server() { return server_; }

  void set_up() {
    ParsedReply created;
    parse_reply(send_request(port(), kDecl + "<create><account id=\"1\" balance=\"0\"/>"
                                             "<account id=\"2\" balance=\"1000000\"/>"
                                             "<symbol sym=\"HOST\"><account id=\"1\">1000</account>"
                                             "</symbol><symbol sym=\"PROBE\"><account id=\"1\">1"
                                             "</account></symbol></create>"),
                created);
    REQUIRE(created.items.size() == 4);
    for (auto item : created.items) REQUIRE(std::string(item.name()) == "created");

    std::string sells = "<transactions id=\"1\">";
    for (int i = 0; i < kFills; ++i) sells += "<order sym=\"HOST\" amount=\"-1\" limit=\"1\"/>";
    ParsedReply sold;
    parse_reply(send_request(port(), sells + "</transactions>"), sold);
    REQUIRE(sold.items.size() == static_cast<std::size_t>(kFills));
    ParsedReply bought;
    parse_reply(
        send_request(port(), "<transactions id=\"2\"><order sym=\"HOST\" amount=\"" +
                                 std::to_string(kFills) + "\" limit=\"1\"/></transactions>"),
        bought);
    REQUIRE(bought.items.size() == 1);
    REQUIRE(std::string(bought.items[0].name()) == "opened");
    filled_order_ = bought.items[0].attribute("id").value();

    large_request_ = "<transactions id=\"2\">";
    for (int i = 0; i < kLargeQueries; ++i)
      large_request_ += "<query id=\"" + filled_order_ + "\"/>";
    large_request_ += "</transactions>";
    // The large reply really is large, and every query in it sees every execution.
    large_reply_size_ = check_large_reply(send_request(port(), large_request_));
    REQUIRE(large_reply_size_ > 1000000);
  }

  // Parses a whole reply to the large request and checks it; returns its size.
  std::size_t check_large_reply(const std::string& reply) {
    ParsedReply r;
    parse_reply(reply, r);
    REQUIRE(r.items.size() == static_cast<std::size_t>(kLargeQueries));
    CHECK(std::string(r.items.back().name()) == "status");
    CHECK(std::distance(r.items.back().children("executed").begin(),
                        r.items.back().children("executed").end()) == kFills);
    return reply.size();
  }

  const std::string& large_request() const { return large_request_; }
  std::size_t large_reply_size() const { return large_reply_size_; }

  // An order nobody can fill (nobody sells PROBE): once acknowledged it stays open for ever,
  // so a query shows whether it was kept.
  static std::string probe_order() {
    return kDecl +
           "<transactions id=\"2\"><order sym=\"PROBE\" amount=\"1\" limit=\"1\"/></transactions>";
  }
  // The id in an <opened> reply to probe_order(); remembered as acknowledged.
  void acknowledged(const std::string& reply) {
    ParsedReply r;
    parse_reply(reply, r);
    REQUIRE(r.items.size() == 1);
    REQUIRE(std::string(r.items[0].name()) == "opened");
    std::string id = r.items[0].attribute("id").value();
    acknowledged_.push_back(id);
    require_open(id);
  }

  // Nothing lost: the acknowledged order is there, still open, when asked on a new connection.
  void require_open(const std::string& id) {
    ParsedReply r;
    parse_reply(
        send_request(port(), "<transactions id=\"2\"><query id=\"" + id + "\"/></transactions>"),
        r);
    REQUIRE(r.items.size() == 1);
    CHECK(std::string(r.items[0].name()) == "status");
    CHECK(std::string(r.items[0].child("open").attribute("shares").value()) == "1");
  }
  const std::vector<std::string>& acknowledged_orders() const { return acknowledged_; }

  // The server process is alive; on failure the test shows how it died and its log's end.
  // `grace`: how long to wait for a dying server's exit to show (a client saw its sockets
  // close a moment before the process is gone).
  void require_alive(milliseconds grace = milliseconds(0)) {
    std::string how;
    bool exited = server_exited(how);
    for (auto until = Clock::now() + grace; !exited && Clock::now() < until;) {
      std::this_thread::sleep_for(milliseconds(20));
      exited = server_exited(how);
    }
    if (exited) {
      std::string log = server_.log();
      if (log.size() > 4000) log = "..." + log.substr(log.size() - 4000);
      FAIL("the server " << how << "; the end of its log:\n" << log);
    }
  }

  // A normal client is served correctly: a new account is created, it places an order, and a
  // query on a third connection shows the order. Returns how long that took.
  milliseconds require_serving() {
    require_alive();
    auto started = Clock::now();
    std::string account = std::to_string(next_account_++);
    ParsedReply created;
    parse_reply(send_request(port(), kDecl + "<create><account id=\"" + account +
                                         "\" balance=\"100\"/></create>"),
                created);
    REQUIRE(created.items.size() == 1);
    CHECK(std::string(created.items[0].name()) == "created");
    CHECK(std::string(created.items[0].attribute("id").value()) == account);
    ParsedReply opened;
    parse_reply(send_request(port(), "<transactions id=\"" + account +
                                         "\"><order sym=\"PROBE\" amount=\"2\" "
                                         "limit=\"50\"/></transactions>"),
                opened);
    REQUIRE(opened.items.size() == 1);
    REQUIRE(std::string(opened.items[0].name()) == "opened");
    ParsedReply status;
    parse_reply(
        send_request(port(), "<transactions id=\"" + account + "\"><query id=\"" +
                                 opened.items[0].attribute("id").value() + "\"/></transactions>"),
        status);
    REQUIRE(status.items.size() == 1);
    CHECK(std::string(status.items[0].child("open").attribute("shares").value()) == "2");
    auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - started);
    require_alive();
    return took;
  }

 private:
  ServerProcess server_;
  std::string filled_order_;
  std::string large_request_;
  std::size_t large_reply_size_ = 0;
  std::vector<std::string> acknowledged_;
  int next_account_ = 1000;
};

enum class End { Reset, HalfClose };
const char* end_name(End end) { return end == End::Reset ? "reset" : "half-close"; }

// Sends `prefix`, ends the connection, and for a half-close returns what the server sent
// before it closed (a reset reads nothing: the client is gone).
std::string partial_then_end(unsigned short port, const std::string& prefix, End end) {
  RawClient c(port);
  if (!prefix.empty()) c.send(prefix);
  if (end == End::Reset) {
    c.reset();
    return {};
  }
  c.half_close();
  bool ended = false;
  std::string reply = c.read_to_end(seconds(kReadTimeoutMs / 1000 + 10), ended);
  if (!ended) throw std::runtime_error("the server did not close a half-closed connection");
  return reply;
}

// One kind of hostile client; `run` makes one such connection (or a few) and checks what a
// half-closing client got back.
struct Kind {
  std::string name;
  std::function<void(Exchange&)> run;
  // Cheap kinds run a few times: the crash this suite was written for needed two connections.
  int repeats = 3;
};

std::vector<Kind> stage_kinds() {
  std::vector<Kind> kinds;
  for (End end : {End::Reset, End::HalfClose}) {
    const bool half = end == End::HalfClose;
    auto named = [end](const std::string& stage) {
      return std::string(end_name(end)) + " " + stage;
    };

    kinds.push_back({named("right after connect"), [end, half](Exchange& x) {
                       std::string got = partial_then_end(x.port(), "", end);
                       // Nothing was asked, so nothing is answered: a quiet close.
                       if (half) CHECK(got.empty());
                     }});
    kinds.push_back({named("inside the length line"), [end, half](Exchange& x) {
                       std::string got = partial_then_end(x.port(), "12", end);
                       if (half) CHECK(contains(single_error(got), "closed before"));
                     }});
    kinds.push_back({named("right after the session hello"), [end, half](Exchange& x) {
                       std::string got = partial_then_end(x.port(), kHello, end);
                       if (half) CHECK(got == kAccept);
                     }});
    kinds.push_back({named("after the hello and part of a length line"), [end, half](Exchange& x) {
                       std::string got = partial_then_end(x.port(), kHello + "12", end);
                       if (!half) return;
                       REQUIRE(got.substr(0, kAccept.size()) == kAccept);
                       got.erase(0, kAccept.size());
                       CHECK(contains(single_error(take_framed(got)), "closed before"));
                     }});
    kinds.push_back({named("inside a request body"), [end, half](Exchange& x) {
                       std::string got =
                           partial_then_end(x.port(), "100\n<create><account id=\"7", end);
                       if (half) CHECK(contains(single_error(got), "closed before"));
                     }});
    kinds.push_back({named("inside a request body of a session"), [end, half](Exchange& x) {
                       std::string got =
                           partial_then_end(x.port(), kHello + "100\n<create><acc", end);
                       if (!half) return;
                       REQUIRE(got.substr(0, kAccept.size()) == kAccept);
                       got.erase(0, kAccept.size());
                       CHECK(contains(single_error(take_framed(got)), "closed before"));
                     }});
    // A whole request, then the end before its reply: with a reset the outcome is unknown to
    // the client (only the server's survival is checked); a half-closing client still reads
    // its reply, and then the order must be kept.
    kinds.push_back({named("after a whole request, before the reply"), [end, half](Exchange& x) {
                       std::string got = partial_then_end(x.port(), frame(x.probe_order()), end);
                       if (half) x.acknowledged(got);
                     }});
    kinds.push_back(
        {named("after a whole request of a session, before the reply"), [end, half](Exchange& x) {
           std::string got = partial_then_end(x.port(), kHello + frame(x.probe_order()), end);
           if (!half) return;
           REQUIRE(got.substr(0, kAccept.size()) == kAccept);
           got.erase(0, kAccept.size());
           x.acknowledged(take_framed(got));
           CHECK(got.empty());
         }});
    kinds.push_back({named("between requests of a session"), [half](Exchange& x) {
                       RawClient c(x.port());
                       c.send(kHello + frame(x.probe_order()));
                       REQUIRE(c.read_line(seconds(10)) == kAccept);
                       x.acknowledged(c.read_framed(seconds(10)));
                       if (!half) return c.reset();
                       c.half_close();
                       bool ended = false;
                       CHECK(c.read_to_end(seconds(10), ended).empty());
                       CHECK(ended);
                     }});
  }
  return kinds;
}

// While a large reply (over a megabyte) is being written; once each, as each costs a render.
std::vector<Kind> large_reply_kinds() {
  std::vector<Kind> kinds;
  // A half-closing client that reads the reply gets all of it.
  kinds.push_back({"half-close after a large request, reading the whole reply", [](Exchange& x) {
                     std::string got =
                         partial_then_end(x.port(), frame(x.large_request()), End::HalfClose);
                     CHECK(x.check_large_reply(got) == x.large_reply_size());
                   }});
  kinds.push_back({"reset right after a large request, reading nothing", [](Exchange& x) {
                     // A small window, so the server's writes stall (while mid-reply) at once.
                     RawClient c(x.port(), 4096);
                     c.send(frame(x.large_request()));
                     std::this_thread::sleep_for(milliseconds(50));  // let the writing start
                     c.reset();
                   }});
  kinds.push_back({"reset in the middle of reading a large reply", [](Exchange& x) {
                     RawClient c(x.port(), 4096);
                     c.send(frame(x.large_request()));
                     c.read_at_least(64 * 1024, seconds(10));  // surely mid-reply now
                     c.reset();
                   }});
  kinds.push_back({"reset in the middle of a large reply of a session", [](Exchange& x) {
                     RawClient c(x.port(), 4096);
                     c.send(kHello + frame(x.large_request()));
                     REQUIRE(c.read_line(seconds(10)) == kAccept);
                     c.read_at_least(64 * 1024, seconds(10));
                     c.reset();
                   }});
  kinds.push_back(
      {"half-close in the middle of reading a large reply, then close unread", [](Exchange& x) {
         RawClient c(x.port(), 4096);
         c.send(frame(x.large_request()));
         c.half_close();
         c.read_at_least(64 * 1024, seconds(10));
         // Leaving the scope is an ordinary close(); the unread reply makes the
         // kernel reset the connection anyway, while the server is still writing.
       }});
  for (auto& k : kinds) k.repeats = 1;
  return kinds;
}

// Garbage instead of the session hello: an <error> reply, then the server closes by itself
// (the client keeps its side open, so only the server can end the connection).
std::vector<Kind> garbage_kinds() {
  const std::vector<std::pair<std::string, std::string>> garbage = {
      {"a session hello of version 2", "EXCHANGE-SESSION 2\n"},
      {"an HTTP request", "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: keep-alive\r\n\r\n"},
      {"binary bytes with a newline", std::string("\x00\x01\x02\xff\xfe\x80\x7f\n", 8)},
      // Looks like the start of a TLS handshake: no newline ever comes.
      {"a TLS ClientHello", std::string("\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", 11)},
  };
  std::vector<Kind> kinds;
  for (const auto& g : garbage) {
    kinds.push_back({"garbage instead of the hello: " + g.first, [bytes = g.second](Exchange& x) {
                       RawClient c(x.port());
                       c.send(bytes);
                       bool ended = false;
                       std::string got = c.read_to_end(seconds(kReadTimeoutMs / 1000 + 10), ended);
                       CHECK(ended);
                       // Well-formed XML too: the garbage must not be echoed raw into it.
                       INFO("reply: " << printable(got));
                       CHECK(is_single_error(got));
                     }});
  }
  return kinds;
}

// A session that sends large requests and never reads a byte of the replies. The server must
// not buffer without bound or block on it: it closes the connection within the write deadline
// (the read timeout) plus slack, and meanwhile a normal client is served as usual.
void never_reading_session(Exchange& x) {
  constexpr int kMaxRequests = 32;  // ~40 MB of replies: far beyond any socket buffers
  const auto bound = milliseconds(kReadTimeoutMs) + seconds(9);
  std::atomic<bool> closed{false};
  std::atomic<int> requests_sent{0};
  std::atomic<long long> closed_after_ms{-1};
  std::string error;  // written by the flooder, read after join()
  std::thread flooder([&] {
    try {
      RawClient c(x.port(), 4096);
      auto started = Clock::now();
      auto deadline = started + bound;
      std::string request = frame(x.large_request());
      bool gone = c.send_within(kHello, deadline) != RawClient::SendResult::Sent;
      while (!gone && requests_sent < kMaxRequests && Clock::now() < deadline) {
        auto r = c.send_within(request, deadline);
        if (r == RawClient::SendResult::Sent) ++requests_sent;
        gone = r == RawClient::SendResult::PeerGone;
      }
      if (gone || c.wait_reset(deadline)) {
        closed = true;
        closed_after_ms = std::chrono::duration_cast<milliseconds>(Clock::now() - started).count();
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  // While the flooder is stuck (or being closed), a normal client is served, in bounded time.
  std::this_thread::sleep_for(milliseconds(300));
  milliseconds worst{0};
  std::exception_ptr failure;
  try {
    for (int i = 0; i < 3; ++i) worst = std::max(worst, x.require_serving());
  } catch (...) {
    failure = std::current_exception();
  }
  flooder.join();
  if (failure) std::rethrow_exception(failure);
  INFO("requests sent " << requests_sent << ", closed after " << closed_after_ms << " ms"
                        << (error.empty() ? "" : ", client error: " + error));
  CHECK(requests_sent >= 1);
  CHECK(closed);
  CHECK(worst < seconds(2));
}

// Thousands of hostile connections at once, mostly the session hello then a reset (what
// aborted five models), mixed with the other early ends.
void parallel_flood(Exchange& x) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 250;
  std::atomic<int> made{0}, refused{0};
  std::atomic<bool> give_up{false};
  const std::string query =
      frame(kDecl + "<transactions id=\"2\"><query id=\"1\"/></transactions>");
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread && !give_up; ++i) {
        int kind = (t + i) % 6;
        std::unique_ptr<RawClient> c;
        // A full accept queue refuses a connection for a moment; a dead server for ever.
        for (int attempt = 0; !c && attempt < 50; ++attempt) {
          try {
            c = std::make_unique<RawClient>(x.port());
          } catch (const std::exception&) {
            std::this_thread::sleep_for(milliseconds(10));
          }
        }
        if (!c) {
          ++refused;
          give_up = true;
          return;
        }
        auto deadline = Clock::now() + seconds(5);
        switch (kind) {
          case 0:
          case 1:
            c->send_within(kHello, deadline);
            break;
          case 2:
            break;
          case 3:
            c->send_within(kHello + "12", deadline);
            break;
          case 4:
            c->send_within(kHello + query, deadline);
            break;
          case 5:
            // Half-close, then go without reading: the server's answer meets a reset.
            c->send_within("12", deadline);
            c->half_close();
            c.reset();  // an ordinary close()
            ++made;
            continue;
        }
        c->reset();
        ++made;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(refused == 0);
  CHECK(made == kThreads * kPerThread);
}

}  // namespace

TEST_CASE("no hostile client takes the exchange down", "[e2e][hostile][concurrency]") {
  auto model = GENERATE(from_range(models_under_test()));
  INFO("model " << model);
  Exchange x(model);
  x.set_up();
  x.require_serving();

  std::vector<Kind> kinds = stage_kinds();
  for (auto& k : garbage_kinds()) kinds.push_back(std::move(k));
  for (auto& k : large_reply_kinds()) kinds.push_back(std::move(k));
  kinds.push_back({"a session that never reads its replies", never_reading_session, 1});
  kinds.push_back({"2000 hostile connections in parallel", parallel_flood, 1});

  for (const auto& kind : kinds) {
    INFO("hostile kind: " << kind.name);
    try {
      for (int i = 0; i < kind.repeats; ++i) kind.run(x);
      x.require_serving();
    } catch (...) {
      // A client-side failure (refused, no reply) most likely means the server died: say so.
      x.require_alive(seconds(2));
      throw;
    }
  }

  // Nothing acknowledged was lost along the way, and the stored state obeys the rules.
  for (const auto& id : x.acknowledged_orders()) x.require_open(id);
  // Three repeats of four acknowledging kinds: a whole request then a half-close, one-shot and
  // in a session, and a reply read between requests, then a reset or a half-close.
  CHECK(x.acknowledged_orders().size() == 4 * 3);
  auto violations = conservation_violations();
  for (const auto& v : violations) UNSCOPED_INFO(v);
  CHECK(violations.empty());

  x.require_alive();
  CHECK(x.server().stop() == 0);
}

// ---- TLS and the logon line (issue 38) ----
//
// A server with --tls-cert, --tls-client-ca and --principals gets garbage where the ClientHello
// belongs and handshakes cut (closed, reset or stalled) at every stage, in TLS 1.3 and 1.2,
// driven flight by flight by StagedTlsClient; a plaintext loopback server with --principals gets
// the logon line abused. All the stalls against one server run at once, so each server waits
// for its read deadline about once.
namespace {

const std::string kOpsKey = "hostile-ops-key-0123456789abcdef";
const std::string kWrongKey = "not-the-ops-key-8086";
const std::string kDeskKey = "hostile-desk-key-0123456789";
// The right key of principal "long": its logon line is 602 bytes, over the 512-byte limit, so a
// server that took the line anyway would answer OK.
const std::string kLongKey(580, 'k');
const std::string kLogonOk = "EXCHANGE-LOGON 1 OK\n";
const std::string kRefusedBadKey = "EXCHANGE-LOGON 1 REFUSED unknown principal or wrong key\n";
const std::string kRefusedLockedOut = "EXCHANGE-LOGON 1 REFUSED too many failed logons";
// How long a hostile connection may take to be ended by the server: its read deadline plus
// generous slack for a slow, shared machine (and ThreadSanitizer).
const milliseconds kEndBound = milliseconds(kReadTimeoutMs) + seconds(10);
// How long a handshake flight may take to come back.
const milliseconds kFlightWait = seconds(10);

std::string logon_line(const std::string& name, const std::string& key) {
  return "EXCHANGE-LOGON 1 " + name + " " + key + "\n";
}

std::string create_account(int id) {
  return kDecl + "<create><account id=\"" + std::to_string(id) + "\" balance=\"1\"/></create>";
}

// The reply created exactly account `id`.
void check_created(const std::string& reply, int id) {
  ParsedReply r;
  parse_reply(reply, r);
  REQUIRE(r.items.size() == 1);
  CHECK(std::string(r.items[0].name()) == "created");
  CHECK(std::string(r.items[0].attribute("id").value()) == std::to_string(id));
}

// What is left until `deadline`, but never nothing: an end already there is still seen.
milliseconds left_until(Clock::time_point deadline) {
  return std::max(milliseconds(100),
                  std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
}

// The certificates (made once per run) and the principals file beside them.
struct Security {
  TestPki pki;
  std::string principals = pki.dir() + "/principals.txt";
  Security() {
    std::ofstream(principals) << "ops admin,trade * " << auth::to_hex(auth::sha256(kOpsKey))
                              << "\nlong trade * " << auth::to_hex(auth::sha256(kLongKey))
                              << "\ndesk admin,trade * " << auth::to_hex(auth::sha256(kDeskKey))
                              << "\n";
    pki.client("ops");  // made now, not inside a timed batch
  }
  TlsClientOptions ops() { return {pki.ca(), pki.client("ops")}; }
};

Security& security() {
  static Security s;
  return s;
}

// A plaintext connection to 127.0.0.1:`port` from the loopback address `source` (127.0.0.2 and
// so on). Every loopback address is one address group to the logon throttle (issue 47), so the
// throttle's cases below count what all of them did.
class FromAddress {
 public:
  FromAddress(const std::string& source, unsigned short port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) throw std::runtime_error("socket() failed");
    int one = 1;  // the port is picked at connect(), so 1000 connections from one address fit
    ::setsockopt(fd_, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    timeval tv{10, 0};  // a send never waits for ever
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    ::inet_pton(AF_INET, source.c_str(), &addr.sin_addr);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd_);
      throw std::runtime_error("cannot bind " + source + ": " + std::strerror(errno));
    }
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd_);
      throw std::runtime_error("cannot connect from " + source + ": " + std::strerror(errno));
    }
  }
  ~FromAddress() { ::close(fd_); }
  FromAddress(const FromAddress&) = delete;
  FromAddress& operator=(const FromAddress&) = delete;

  // False once the server is gone.
  bool send(const std::string& bytes) {
    for (std::size_t sent = 0; sent < bytes.size();) {
      ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      sent += static_cast<std::size_t>(n);
    }
    return true;
  }

  // Everything until the server ends the connection (EOF or reset: `ended`) or `within` passes.
  std::string read_to_end(milliseconds within, bool& ended) {
    const auto deadline = Clock::now() + within;
    std::string out;
    ended = false;
    for (;;) {
      auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(std::max<long long>(0, left))) > 0) {
        char buf[4096];
        ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
        if (n <= 0) {
          ended = true;
          return out;
        }
        out.append(buf, static_cast<std::size_t>(n));
      } else if (left <= 0) {
        return out;
      }
    }
  }

 private:
  int fd_ = -1;
};

enum class Cut { Close, Reset, Stall };
const char* cut_name(Cut cut) {
  return cut == Cut::Close ? "close" : cut == Cut::Reset ? "reset" : "stall";
}

// A stage of the handshake a client reaches before it cuts the connection.
struct Stage {
  std::string name;
  std::function<void(StagedTlsClient&)> reach;
};

std::vector<Stage> handshake_stages() {
  // The ClientHello, sent whole, and the client's next flight, not sent.
  auto hello_then_flight = [](StagedTlsClient& c) {
    REQUIRE(c.send(c.next_flight(kFlightWait)));
    std::string flight = c.next_flight(kFlightWait);
    REQUIRE_FALSE(flight.empty());
    return flight;
  };
  // The whole handshake; nothing of the application sent.
  auto handshake = [hello_then_flight](StagedTlsClient& c) {
    REQUIRE(c.send(hello_then_flight(c)));
    if (!c.handshake_done()) CHECK(c.next_flight(kFlightWait).empty());  // TLS 1.2
    REQUIRE(c.handshake_done());
  };
  return {
      {"the ClientHello's record header",
       [](StagedTlsClient& c) { REQUIRE(c.send(c.next_flight(kFlightWait).substr(0, 5))); }},
      {"half the ClientHello",
       [](StagedTlsClient& c) {
         std::string hello = c.next_flight(kFlightWait);
         REQUIRE(c.send(hello.substr(0, hello.size() / 2)));
       }},
      {"the whole ClientHello, nothing read",
       [](StagedTlsClient& c) { REQUIRE(c.send(c.next_flight(kFlightWait))); }},
      {"the server's flight read, none of the client's sent",
       [hello_then_flight](StagedTlsClient& c) { hello_then_flight(c); }},
      {"the client's flight without its last record (the Finished)",
       [hello_then_flight](StagedTlsClient& c) {
         auto records = StagedTlsClient::records(hello_then_flight(c));
         REQUIRE(records.size() >= 2);
         records.pop_back();
         std::string all_but_finished;
         for (const auto& r : records) all_but_finished += r;
         REQUIRE(c.send(all_but_finished));
       }},
      {"the whole handshake, no application data", handshake},
      {"the handshake, then half a record of a request",
       [handshake](StagedTlsClient& c) {
         handshake(c);
         std::string sealed = c.seal(frame(create_account(997)));
         REQUIRE(c.send(sealed.substr(0, sealed.size() / 2)));
       }},
  };
}

}  // namespace

TEST_CASE("hostile TLS clients: garbage for a ClientHello, handshakes cut at every stage",
          "[e2e][hostile][tls][concurrency]") {
  auto model = GENERATE(from_range(models_under_test()));
  INFO("model " << model);
  Security& s = security();
  const unsigned short admin = free_port();
  ServerProcess server({"--concurrency", model, "--threads", "2", "--reset", "--read-timeout-ms",
                        std::to_string(kReadTimeoutMs), "--tls-cert", s.pki.server_cert(),
                        "--tls-key", s.pki.server_key(), "--tls-client-ca", s.pki.ca(),
                        "--principals", s.principals, "--admin-port", std::to_string(admin)});
  int next_account = 1;
  // An authenticated client (a certificate of a listed name) gets a real reply.
  auto require_tls_serving = [&] {
    const int id = next_account++;
    check_created(tls_send(server.port(), s.ops(), frame(create_account(id))), id);
  };
  require_tls_serving();

  // Garbage where the ClientHello belongs. This side stays open: only the server can end it.
  std::mt19937 random(38);
  std::string noise(300, '\0');
  for (auto& ch : noise) ch = static_cast<char>(random() & 0xff);
  const std::vector<std::pair<std::string, std::string>> garbage = {
      {"random bytes", noise},
      {"an HTTP request", "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"},
      {"a plaintext request", frame(create_account(999))},
      {"a plaintext logon line and request",
       logon_line("ops", kOpsKey) + frame(create_account(998))},
      {"a record header announcing 65535 bytes", std::string("\x16\x03\x01\xff\xff", 5)},
      {"a record header announcing 16384 bytes, 3 of them sent",
       std::string("\x16\x03\x01\x40\x00\x01\x00\x3f", 8)},
      {"a ClientHello announcing 16 MiB", std::string("\x16\x03\x01\x00\x04\x01\xff\xff\xff", 9)},
  };
  std::vector<std::pair<std::string, std::unique_ptr<RawClient>>> garbage_clients;
  for (const auto& g : garbage) {
    INFO("garbage: " << g.first);
    auto c = std::make_unique<RawClient>(server.port());
    c->send(g.second);
    garbage_clients.emplace_back(g.first, std::move(c));
  }

  // Handshakes cut at every stage: closed and reset at once, or stalled (held for the server to
  // end).
  std::vector<std::pair<std::string, std::unique_ptr<StagedTlsClient>>> stalled;
  for (int version : {TLS1_3_VERSION, TLS1_2_VERSION}) {
    for (const auto& stage : handshake_stages()) {
      for (Cut cut : {Cut::Close, Cut::Reset, Cut::Stall}) {
        const std::string name =
            std::string(version == TLS1_3_VERSION ? "TLS 1.3: " : "TLS 1.2: ") + stage.name +
            ", then " + cut_name(cut);
        INFO(name);
        auto c = std::make_unique<StagedTlsClient>(server.port(), s.ops(), version);
        stage.reach(*c);
        if (cut == Cut::Close) c->close();
        if (cut == Cut::Reset) c->reset();
        if (cut == Cut::Stall) stalled.emplace_back(name, std::move(c));
      }
    }
  }
  const auto held_from = Clock::now();
  // Served while every stalled connection is still held.
  require_tls_serving();

  // Each one the server ends: EOF or a reset, within the read deadline (and slack); never a
  // protocol reply.
  const auto deadline = held_from + kEndBound;
  for (auto& [name, c] : garbage_clients) {
    INFO("garbage: " << name);
    bool ended = false;
    std::string got = c->read_to_end(left_until(deadline), ended);
    INFO("the server sent: " << printable(got));
    CHECK(ended);
    CHECK_FALSE(contains(got, "<results"));
    CHECK_FALSE(contains(got, "EXCHANGE-"));
    CHECK_FALSE(contains(got, kOpsKey));
  }
  for (auto& [name, c] : stalled) {
    INFO(name);
    CHECK(c->ended_within(left_until(deadline)));
  }
  INFO("the last hostile connection ended "
       << std::chrono::duration_cast<milliseconds>(Clock::now() - held_from).count()
       << " ms after the stalls began");

  // No connection stays open (and, per client, no thread: one serves each connection).
  CHECK(wait_until([&] { return scrape(admin, "exchange_connections_open") == 0; }, seconds(10)));
  require_tls_serving();
  const std::string log = server.log();
  CHECK_FALSE(contains(log, "; closing it"));  // no exception escaped an I/O handler
  CHECK_FALSE(contains(log, kOpsKey));
  CHECK(server.stop() == 0);
}

TEST_CASE("logon line abuse on a plaintext loopback server with --principals",
          "[e2e][hostile][auth][concurrency]") {
  auto model = GENERATE(from_range(models_under_test()));
  INFO("model " << model);
  Security& s = security();
  const unsigned short admin = free_port();
  ServerProcess server({"--concurrency", model, "--threads", "2", "--reset", "--read-timeout-ms",
                        std::to_string(kReadTimeoutMs), "--principals", s.principals,
                        "--logon-max-failures", "3", "--logon-lockout-ms", "60000", "--admin-port",
                        std::to_string(admin)});
  const unsigned short port = server.port();
  std::string replies;  // all the server sent, searched for keys at the end
  // `bytes` sent from `source`; what the server sent until it closed, which it must.
  auto exchange = [&](const std::string& source, const std::string& bytes) {
    FromAddress c(source, port);
    REQUIRE(c.send(bytes));
    bool ended = false;
    std::string got = c.read_to_end(kEndBound, ended);
    replies += got;
    INFO("the server sent: " << printable(got));
    REQUIRE(ended);
    return got;
  };
  auto refusals = [&](const std::string& reason) {
    return scrape(admin, "exchange_auth_refusals_total{reason=\"" + reason + "\"}");
  };

  // Checked last: the start of a logon line, no newline, then nothing.
  FromAddress stalled("127.0.0.2", port);
  REQUIRE(stalled.send("EXCHANGE-LOGON 1 ops " + kOpsKey));
  const auto stalled_from = Clock::now();

  {
    INFO("the right key, the line ended by CR LF: answered, then the request");
    std::string got = exchange(
        "127.0.0.3", "EXCHANGE-LOGON 1 ops " + kOpsKey + "\r\n" + frame(create_account(1)));
    REQUIRE(got.substr(0, kLogonOk.size()) == kLogonOk);
    check_created(got.substr(kLogonOk.size()), 1);
  }
  {
    INFO("a logon line of 602 bytes in one piece, the right key of its name");
    const std::string line = logon_line("long", kLongKey);
    REQUIRE(line.size() > 600);
    std::string got = exchange("127.0.0.4", line + frame(create_account(2)));
    CHECK(got.substr(0, kLogonOk.size()) != kLogonOk);
    CHECK(contains(single_error(got), "longer than 512 bytes"));
  }
  {
    INFO("600 bytes of a logon line and no newline");
    std::string got = exchange("127.0.0.5", logon_line("long", kLongKey).substr(0, 600));
    CHECK(contains(single_error(got), "longer than 512 bytes"));
  }
  const std::vector<std::pair<std::string, std::string>> odd_names = {
      {"a NUL after it", std::string("ops\0", 4)},
      {"a NUL inside", std::string("o\0ps", 4)},
      {"a NUL before it", std::string("\0ops", 4)},
      {"a CR after it", "ops\r"},
      {"a CR inside", "o\rps"},
  };
  int host = 10;
  for (const auto& [what, name] : odd_names) {
    INFO("the right key, the name with " << what);
    CHECK(exchange("127.0.0." + std::to_string(host++),
                   logon_line(name, kOpsKey) + frame(create_account(3))) == kRefusedBadKey);
  }
  {
    INFO("a logon line after the session hello");
    std::string got =
        exchange("127.0.0.20", kHello + logon_line("ops", kOpsKey) + frame(create_account(4)));
    REQUIRE(got.substr(0, kAccept.size()) == kAccept);
    got.erase(0, kAccept.size());
    CHECK(contains(single_error(take_framed(got)), "Bad logon"));
    CHECK(got.empty());
  }
  {
    INFO("a second logon line");
    std::string got =
        exchange("127.0.0.21", logon_line("ops", kOpsKey) + logon_line("ops", kOpsKey) +
                                   frame(create_account(5)));
    REQUIRE(got.substr(0, kLogonOk.size()) == kLogonOk);
    CHECK(is_single_error(got.substr(kLogonOk.size())));
  }

  {
    INFO("1000 failed logons from one address; then its right key, and another address's");
    const double locked_before = refusals("locked_out");
    const double bad_before = refusals("bad_key");
    constexpr int kThreads = 4, kEach = 250;
    std::atomic<int> bad{0}, locked{0}, other{0};
    std::vector<std::string> others(kThreads);  // the first unexpected reply of each thread
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kEach; ++i) {
          std::string got;
          try {
            FromAddress c("127.0.0.50", port);
            bool ended = false;
            if (c.send(logon_line("ops", kWrongKey))) got = c.read_to_end(kEndBound, ended);
            if (!ended) got += " (not closed)";
          } catch (const std::exception& e) {
            got = e.what();
          }
          if (got == kRefusedBadKey) {
            ++bad;
          } else if (got.rfind(kRefusedLockedOut, 0) == 0 && got.back() == '\n' &&
                     got.find('\n') == got.size() - 1) {
            ++locked;
          } else {
            ++other;
            if (others[t].empty()) others[t] = got;
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    for (const auto& o : others) UNSCOPED_INFO("unexpected reply: " << printable(o));
    CHECK(other == 0);
    // 3 failures lock it; logons racing the third may fail before they see the lock.
    CHECK(bad >= 3);
    CHECK(bad <= 3 + kThreads - 1);
    CHECK(bad + locked == kThreads * kEach);
    CHECK(refusals("locked_out") - locked_before == locked);
    CHECK(refusals("bad_key") - bad_before == bad);
    const std::string right =
        exchange("127.0.0.50", logon_line("ops", kOpsKey) + frame(create_account(6)));
    CHECK(right.rfind(kRefusedLockedOut, 0) == 0);
    CHECK_FALSE(contains(right, "<created"));
    CHECK(refusals("locked_out") - locked_before == locked + 1);
    // Another loopback address is the same client to the throttle (on 6f484b8 it was not).
    CHECK(exchange("127.0.0.51", logon_line("ops", kOpsKey)).rfind(kRefusedLockedOut, 0) == 0);
    // Another name is not locked out by ops's failures.
    std::string other_name =
        exchange("127.0.0.51", logon_line("desk", kDeskKey) + frame(create_account(7)));
    REQUIRE(other_name.substr(0, kLogonOk.size()) == kLogonOk);
    check_created(other_name.substr(kLogonOk.size()), 7);
  }
  {
    INFO("guesses at one name, each pair followed by a good logon of one's own");
    // On 6f484b8 any success erased its address's failures: unlimited guesses.
    int bad = 0;
    for (int round = 0; round < 4; ++round) {
      for (int g = 0; g < 2; ++g)
        if (exchange("127.0.1.1", logon_line("long", kWrongKey)) == kRefusedBadKey) ++bad;
      const std::string own =
          exchange("127.0.1.1", logon_line("desk", kDeskKey) + frame(create_account(10 + round)));
      CHECK(own.substr(0, kLogonOk.size()) == kLogonOk);
    }
    CHECK(bad == 3);
  }
  {
    INFO("4 guesses from each of 20 loopback addresses: 3 in all, then locked");
    int bad = 0;
    for (int host = 1; host <= 20; ++host)
      for (int g = 0; g < 4; ++g)
        if (exchange("127.0.2." + std::to_string(host), logon_line("nobody", kWrongKey)) ==
            kRefusedBadKey)
          ++bad;
    CHECK(bad == 3);
  }
  {
    INFO("failures of any names lock the group at --logon-max-group-failures (20)");
    // Every bad_key refusal so far was a failure of the loopback group.
    int name = 0;
    while (refusals("bad_key") < 20 && name < 40)
      CHECK(exchange("127.0.3.1", logon_line("guess" + std::to_string(name++), kWrongKey)) ==
            kRefusedBadKey);
    REQUIRE(refusals("bad_key") == 20);
    CHECK(exchange("127.0.3.2", logon_line("desk", kDeskKey)).rfind(kRefusedLockedOut, 0) == 0);
  }

  {
    INFO("the logon line without its newline is cut at the read deadline");
    bool ended = false;
    std::string got = stalled.read_to_end(left_until(stalled_from + kEndBound), ended);
    replies += got;
    CHECK(ended);
    CHECK(contains(single_error(got), "timed out"));
  }

  // No key in any reply or in the log; names with control bytes logged without them.
  CHECK_FALSE(contains(replies, kOpsKey));
  CHECK_FALSE(contains(replies, kWrongKey));
  CHECK_FALSE(contains(replies, kLongKey.substr(0, 64)));
  const std::string log = server.log();
  CHECK_FALSE(contains(log, kOpsKey));
  CHECK_FALSE(contains(log, kWrongKey));
  CHECK_FALSE(contains(log, kLongKey.substr(0, 64)));
  CHECK(log.find('\0') == std::string::npos);
  CHECK(log.find('\r') == std::string::npos);
  CHECK(contains(log, "(principal 'o?ps')"));
  CHECK(server.stop() == 0);
}

// ---- Slots before authentication (issue 47, item 4) ----
//
// Connections that have not authenticated yet (pending: the TLS handshake, the logon line, or
// without --principals the first request) give way to newcomers, are cut --logon-timeout-ms
// after their accept, and a TLS client refused busy gets a TLS alert. The read and logon
// timeouts are long where only the eviction may make room, short where the logon timeout is
// what is checked; no assertion waits for a bound tighter than many seconds.
namespace {

const std::vector<std::string> kSlotModels = {"reactor", "per-client"};

// The flags of a server in `model`: TLS with client certificates and --principals if `tls`,
// then `more`.
std::vector<std::string> slot_flags(const std::string& model, bool tls,
                                    std::vector<std::string> more) {
  Security& s = security();
  std::vector<std::string> f = {"--concurrency", model, "--threads", "2", "--reset"};
  if (tls)
    f.insert(f.end(), {"--tls-cert", s.pki.server_cert(), "--tls-key", s.pki.server_key(),
                       "--tls-client-ca", s.pki.ca(), "--principals", s.principals});
  f.insert(f.end(), more.begin(), more.end());
  return f;
}

// Idle sockets: connected, nothing sent.
struct IdleSockets {
  std::vector<int> fds;
  ~IdleSockets() {
    for (int fd : fds) ::close(fd);
  }
  void open(unsigned short port, int n) {
    for (int i = 0; i < n; ++i) fds.push_back(connect_loopback(port));
  }
  // How many the server has closed (EOF or reset) by now.
  int ended() const {
    int n = 0;
    for (int fd : fds) {
      pollfd p{fd, POLLIN, 0};
      char byte;
      if (::poll(&p, 1, 0) > 0 && ::recv(fd, &byte, 1, MSG_DONTWAIT) <= 0) ++n;
    }
    return n;
  }
};

TlsClientOptions anonymous(Security& s) { return {s.pki.ca(), {}}; }

// A persistent TLS session of `options`, past its acknowledgement: the server has started it.
std::unique_ptr<TlsConnection> tls_session(unsigned short port, const TlsClientOptions& options,
                                           const std::string& logon = {}) {
  auto c = std::make_unique<TlsConnection>(port, options);
  c->write(logon + kHello);
  if (!logon.empty()) REQUIRE(c->read_line() + "\n" == kLogonOk);
  REQUIRE(c->read_line() + "\n" == kAccept);
  return c;
}

// A certificate client and a key-logon client (TLS, no certificate) are each served a request.
void require_authenticated_served(unsigned short port, Security& s, int& next_account) {
  const int by_certificate = next_account++;
  check_created(tls_send(port, s.ops(), frame(create_account(by_certificate))), by_certificate);
  const int by_key = next_account++;
  const std::string got =
      tls_send(port, anonymous(s), logon_line("ops", kOpsKey) + frame(create_account(by_key)));
  REQUIRE(got.substr(0, kLogonOk.size()) == kLogonOk);
  check_created(got.substr(kLogonOk.size()), by_key);
}

}  // namespace

TEST_CASE("idle sockets holding every slot give way to clients that authenticate",
          "[e2e][hostile][auth][slots]") {
  Security& s = security();
  for (const std::string& model : kSlotModels) {
    DYNAMIC_SECTION(model) {
      const unsigned short admin = free_port();
      // Deadlines far beyond the test: only giving way can make room.
      ServerProcess server(
          slot_flags(model, true,
                     {"--admin-port", std::to_string(admin), "--max-connections", "10",
                      "--read-timeout-ms", "120000", "--logon-timeout-ms", "120000"}));
      auto metric = [&](const std::string& name) { return scrape(admin, name); };
      auto pending_are = [&](double n) {
        return wait_until([&] { return metric("exchange_connections_pending") == n; }, seconds(30));
      };
      IdleSockets idle;
      // Every idle socket accepted is pending or was closed for a newcomer (the authenticated
      // clients never are; the start-up probe may have been).
      auto all_accepted = [&] {
        return wait_until(
            [&] {
              return metric("exchange_connections_pending") +
                         metric("exchange_connections_evicted_total") >=
                     static_cast<double>(idle.fds.size());
            },
            seconds(60));
      };
      int next_account = 1;

      idle.open(server.port(), 10);
      REQUIRE(all_accepted());
      REQUIRE(pending_are(10));
      const auto held_from = Clock::now();
      require_authenticated_served(server.port(), s, next_account);
      CHECK(wait_until([&] { return idle.ended() >= 1; }, seconds(20)));

      idle.open(server.port(), 500);
      REQUIRE(all_accepted());
      CHECK(pending_are(10));
      require_authenticated_served(server.port(), s, next_account);

      // A persistent session keeps its slot however many newcomers come after it.
      auto kept = tls_session(server.port(), s.ops());
      idle.open(server.port(), 50);
      REQUIRE(all_accepted());
      CHECK(pending_are(9));
      const int open_idle = static_cast<int>(idle.fds.size()) - 9;
      CHECK(wait_until([&] { return idle.ended() == open_idle; }, seconds(20)));
      check_created(kept->request(create_account(next_account)), next_account);
      INFO("served " << std::chrono::duration_cast<milliseconds>(Clock::now() - held_from).count()
                     << " ms after the idle sockets first held every slot");
      CHECK(Clock::now() - held_from < seconds(100));  // before any deadline could have helped
      CHECK(metric("exchange_connections_refused_total") == 0);
      CHECK(server.stop() == 0);
    }
  }
}

TEST_CASE("a connection not authenticated is cut at --logon-timeout-ms, long before the read one",
          "[e2e][hostile][auth][slots]") {
  Security& s = security();
  constexpr int kLogonTimeoutMs = 500;
  // Far beyond the checks below: a connection cut at all was cut by the logon timeout.
  const milliseconds read_timeout = seconds(120);
  const milliseconds bound = seconds(30);
  for (const std::string& model : kSlotModels) {
    DYNAMIC_SECTION(model << ", TLS and --principals") {
      ServerProcess server(slot_flags(model, true,
                                      {"--read-timeout-ms", std::to_string(read_timeout.count()),
                                       "--logon-timeout-ms", std::to_string(kLogonTimeoutMs)}));
      // Authenticated first, then idle for several logon timeouts: still served after.
      auto by_certificate = tls_session(server.port(), s.ops());
      auto by_key = tls_session(server.port(), anonymous(s), logon_line("ops", kOpsKey));
      const auto from = Clock::now();
      RawClient silent(server.port());  // no ClientHello
      StagedTlsClient no_logon(server.port(), anonymous(s));
      REQUIRE(no_logon.send(no_logon.next_flight(kFlightWait)));
      REQUIRE(no_logon.send(no_logon.next_flight(kFlightWait)));
      if (!no_logon.handshake_done()) CHECK(no_logon.next_flight(kFlightWait).empty());  // 1.2
      REQUIRE(no_logon.handshake_done());
      StagedTlsClient half_logon(server.port(), anonymous(s));
      REQUIRE(half_logon.send(half_logon.next_flight(kFlightWait)));
      REQUIRE(half_logon.send(half_logon.next_flight(kFlightWait)));
      if (!half_logon.handshake_done()) CHECK(half_logon.next_flight(kFlightWait).empty());
      REQUIRE(half_logon.send(half_logon.seal("EXCHANGE-LOGON 1 ops ")));
      CHECK(silent.ended_within(bound));
      CHECK(no_logon.ended_within(bound));
      CHECK(half_logon.ended_within(bound));
      INFO("cut after " << std::chrono::duration_cast<milliseconds>(Clock::now() - from).count()
                        << " ms");
      CHECK(Clock::now() - from < read_timeout / 2);
      std::this_thread::sleep_for(milliseconds(3 * kLogonTimeoutMs));
      check_created(by_certificate->request(create_account(1)), 1);
      check_created(by_key->request(create_account(2)), 2);
      CHECK(server.stop() == 0);
    }
    DYNAMIC_SECTION(model << ", plaintext without --principals") {
      ServerProcess server(slot_flags(model, false,
                                      {"--read-timeout-ms", std::to_string(read_timeout.count()),
                                       "--logon-timeout-ms", std::to_string(kLogonTimeoutMs)}));
      Session served(server.port());  // past its first request: authenticated
      check_created(served.request(create_account(1)), 1);
      const auto from = Clock::now();
      RawClient silent(server.port());
      RawClient hello_only(server.port());
      hello_only.send(kHello);
      CHECK(silent.ended_within(bound));
      bool ended = false;
      CHECK(hello_only.read_to_end(bound, ended) == kAccept);  // a quiet close, after the hello
      CHECK(ended);
      CHECK(Clock::now() - from < read_timeout / 2);
      std::this_thread::sleep_for(milliseconds(3 * kLogonTimeoutMs));
      check_created(served.request(create_account(2)), 2);
      CHECK(server.stop() == 0);
    }
  }
}

TEST_CASE("at the cap with every connection authenticated: a TLS alert, or 'Server busy' XML",
          "[e2e][hostile][auth][slots]") {
  Security& s = security();
  for (const std::string& model : kSlotModels) {
    DYNAMIC_SECTION(model << ", TLS") {
      const unsigned short admin = free_port();
      ServerProcess server(slot_flags(
          model, true, {"--admin-port", std::to_string(admin), "--max-connections", "3"}));
      std::vector<std::unique_ptr<TlsConnection>> held;
      held.push_back(tls_session(server.port(), s.ops()));
      held.push_back(tls_session(server.port(), s.ops()));
      held.push_back(tls_session(server.port(), anonymous(s), logon_line("ops", kOpsKey)));
      std::string why;
      try {
        TlsConnection refused(server.port(), s.ops());
        why = "(the handshake succeeded: " + refused.read_to_eof() + ")";
      } catch (const TlsHandshakeFailed& e) {
        why = e.what();
      }
      INFO("the refused client's error: " << why);
      CHECK(contains(why, "alert internal error"));
      CHECK_FALSE(contains(why, "wrong version number"));
      CHECK(scrape(admin, "exchange_connections_refused_total") == 1);
      // Those that hold the slots are served as before.
      check_created(held[0]->request(create_account(1)), 1);
      check_created(held[2]->request(create_account(2)), 2);
      CHECK(server.stop() == 0);
    }
    DYNAMIC_SECTION(model << ", plaintext") {
      ServerProcess server(slot_flags(model, false, {"--max-connections", "2"}));
      std::vector<std::unique_ptr<Session>> held;
      for (int id = 1; id <= 2; ++id) {
        held.push_back(std::make_unique<Session>(server.port()));
        check_created(held.back()->request(create_account(id)), id);
      }
      RawClient refused(server.port());
      bool ended = false;
      const std::string got = refused.read_to_end(seconds(20), ended);
      CHECK(ended);
      CHECK(single_error(got) == "Server busy: too many open connections (limit 2)");
      CHECK(server.stop() == 0);
    }
  }
}
