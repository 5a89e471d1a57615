// net::FrameReader and reply framing (PROTOCOL.md section 2).
#include "net/framing.hpp"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>
#include <pugixml.hpp>

// Records the largest single allocation, to show that an announced length is refused before
// any buffer of that size is allocated. Sanitizers bring their own operator new (and flag
// mixing it with ours), so there the check is left to them: ASan aborts on a huge allocation.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FRAMING_TEST_TRACKS_ALLOCATIONS 0
#else
#define FRAMING_TEST_TRACKS_ALLOCATIONS 1
#endif

namespace {
std::size_t g_largest_allocation = 0;
}

#if FRAMING_TEST_TRACKS_ALLOCATIONS
void* operator new(std::size_t size) {
  if (size > g_largest_allocation) g_largest_allocation = size;
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#endif

using net::FrameReader;
using Event = FrameReader::Event;

namespace {

struct Step {
  Event event;
  std::string out;
  bool operator==(const Step& o) const { return event == o.event && out == o.out; }
};

// Takes events until the reader needs more bytes or reports an error.
std::vector<Step> drain(FrameReader& reader) {
  std::vector<Step> steps;
  for (int guard = 0; guard < 1000; ++guard) {
    std::string out;
    Event e = reader.next(out);
    if (e == Event::NeedMore) return steps;
    steps.push_back({e, e == Event::SessionHello ? std::string() : out});
    if (e == Event::Error) return steps;
  }
  FAIL("reader never asked for more");
  return steps;
}

std::vector<Step> feed_all(FrameReader& reader, const std::string& bytes) {
  reader.feed(bytes.data(), bytes.size());
  return drain(reader);
}

// Feeds one byte at a time, draining after each.
std::vector<Step> feed_bytewise(FrameReader& reader, const std::string& bytes) {
  std::vector<Step> steps;
  for (char c : bytes) {
    reader.feed(&c, 1);
    for (Step& s : drain(reader)) steps.push_back(std::move(s));
    if (!steps.empty() && steps.back().event == Event::Error) break;
  }
  return steps;
}

Step request(std::string payload) { return {Event::Request, std::move(payload)}; }
const Step kHello{Event::SessionHello, ""};

std::string error_of(const std::vector<Step>& steps) {
  REQUIRE_FALSE(steps.empty());
  REQUIRE(steps.back().event == Event::Error);
  return steps.back().out;
}

}  // namespace

namespace Catch {
template <>
struct StringMaker<Step> {
  static std::string convert(const Step& s) {
    const char* names[] = {"NeedMore", "Request", "SessionHello", "Logon", "Error"};
    return std::string(names[static_cast<int>(s.event)]) + "(" + s.out + ")";
  }
};
}  // namespace Catch

TEST_CASE("one request, whole and byte at a time", "[framing]") {
  const std::string payload = "<create><account id=\"1\" balance=\"5\"/></create>";
  const std::string wire = std::to_string(payload.size()) + "\n" + payload;
  {
    FrameReader r(1 << 20);
    CHECK(feed_all(r, wire) == std::vector<Step>{request(payload)});
  }
  {
    FrameReader r(1 << 20);
    CHECK(feed_bytewise(r, wire) == std::vector<Step>{request(payload)});
  }
}

TEST_CASE("the PROTOCOL.md example request is 173 bytes", "[framing]") {
  const std::string payload =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<create>\n"
      "  <account id=\"123456\" balance=\"1000\"/>\n  <symbol sym=\"SPY\">\n"
      "    <account id=\"123456\">100000</account>\n  </symbol>\n</create>\n";
  FrameReader r(1 << 20);
  CHECK(feed_all(r, "173\n" + payload) == std::vector<Step>{request(payload)});
}

TEST_CASE("several requests in one buffer and across chunks", "[framing]") {
  FrameReader r(1000);
  CHECK(feed_all(r, "5\nhello3\nabc0\n4\n1\n2\n") ==
        std::vector<Step>{request("hello"), request("abc"), request(""), request("1\n2\n")});
  CHECK_FALSE(r.mid_request());

  // Chunks that cut the length line and the payload anywhere.
  FrameReader c(1000);
  CHECK(feed_all(c, "1").empty());
  CHECK(feed_all(c, "0\nhel").empty());
  CHECK(feed_all(c, "lo wor").empty());
  CHECK(feed_all(c, "l5\nab") == std::vector<Step>{request("hello worl")});
  CHECK(feed_all(c, "cde") == std::vector<Step>{request("abcde")});
}

TEST_CASE("a payload split across many feeds keeps every byte", "[framing]") {
  FrameReader r(1000);
  std::string payload;
  for (int i = 0; i < 300; ++i) payload += static_cast<char>(i % 256);  // includes NUL, \n, \r
  std::string wire = std::to_string(payload.size()) + "\r\n" + payload + "2\nok";
  std::vector<Step> steps;
  for (std::size_t i = 0; i < wire.size(); i += 7) {
    std::string chunk = wire.substr(i, 7);
    r.feed(chunk.data(), chunk.size());
    for (Step& s : drain(r)) steps.push_back(s);
  }
  CHECK(steps == std::vector<Step>{request(payload), request("ok")});
}

TEST_CASE("\\r\\n after the length is tolerated", "[framing]") {
  FrameReader r(1000);
  CHECK(feed_all(r, "5\r\nhello2\r\nhi") == std::vector<Step>{request("hello"), request("hi")});
  FrameReader b(1000);
  CHECK(feed_bytewise(b, "5\r\nhello") == std::vector<Step>{request("hello")});
  // Only one \r, right before the \n.
  FrameReader two(1000);
  error_of(feed_all(two, "5\r\r\nhello"));
  FrameReader mid(1000);
  error_of(feed_all(mid, "5\r5\nhello"));
}

TEST_CASE("leading zeros in the length are still base 10", "[framing]") {
  FrameReader r(1000);
  CHECK(feed_all(r, "0005\nhello010\n0123456789") ==
        std::vector<Step>{request("hello"), request("0123456789")});
}

TEST_CASE("the session hello is recognised only as the first line", "[framing][session]") {
  // The lines both ends share (common/wire/session_hello.hpp), as PROTOCOL.md writes them.
  CHECK(wire::kSessionHello == "EXCHANGE-SESSION 1");
  CHECK(wire::kSessionAccept == "EXCHANGE-SESSION 1 OK");

  FrameReader r(1000);
  CHECK(feed_all(r, "EXCHANGE-SESSION 1\n5\nhello2\nhi") ==
        std::vector<Step>{kHello, request("hello"), request("hi")});

  FrameReader crlf(1000);
  CHECK(feed_all(crlf, "EXCHANGE-SESSION 1\r\n5\r\nhello") ==
        std::vector<Step>{kHello, request("hello")});

  FrameReader bytewise(1000);
  CHECK(feed_bytewise(bytewise, "EXCHANGE-SESSION 1\n5\nhello") ==
        std::vector<Step>{kHello, request("hello")});

  // After a request, or after the hello itself, the hello is just a bad length line.
  FrameReader later(1000);
  auto steps = feed_all(later, "5\nhelloEXCHANGE-SESSION 1\n");
  REQUIRE(steps.size() == 2);
  CHECK(steps[0] == request("hello"));
  CHECK(error_of(steps).find("EXCHANGE-SESSION 1") != std::string::npos);
  FrameReader twice(1000);
  steps = feed_all(twice, "EXCHANGE-SESSION 1\nEXCHANGE-SESSION 1\n");
  REQUIRE(steps.size() == 2);
  CHECK(steps[0] == kHello);
  error_of(steps);

  // Other versions or spellings fail fast instead of hanging.
  for (const char* line : {"EXCHANGE-SESSION 2\n", "EXCHANGE-SESSION 1 \n", "exchange-session 1\n",
                           "EXCHANGE-SESSION\n", " EXCHANGE-SESSION 1\n"}) {
    INFO(line);
    FrameReader other(1000);
    auto s = feed_all(other, line);
    REQUIRE(s.size() == 1);
    error_of(s);
  }
}

TEST_CASE("a first line that is not a length is an error", "[framing][errors]") {
  for (const char* line : {"abc\n", "-5\n", "+5\n", " 5\n", "5 \n", "5x\n", "\n", "\r\n", "0x10\n",
                           "1e3\n", "<create/>\n", "5.0\n"}) {
    INFO("line: " << line);
    FrameReader r(1000);
    std::string why = error_of(feed_all(r, line));
    CHECK(why.find("length") != std::string::npos);
    FrameReader b(1000);
    CHECK(error_of(feed_bytewise(b, line)) == why);
  }
  // The error quotes a bounded part of the line.
  FrameReader r(1000);
  std::string why = error_of(feed_all(r, "abcdefghijklmnopqrst\n"));
  CHECK(why.find("abcdefghijklmnopqrst") != std::string::npos);
}

TEST_CASE("an over-long first line is refused without waiting for a newline", "[framing][errors]") {
  // Twenty digits may still be a length.
  FrameReader ok(1000);
  CHECK(feed_all(ok, std::string(20, '1')).empty());
  CHECK(ok.mid_request());

  // A request sent without a length line (e.g. an old client that forgot it) fails fast.
  FrameReader xml(1000);
  std::string why = error_of(feed_all(xml, "<?xml version=\"1.0\" encoding=\"UTF-8\"?><create/>"));
  CHECK(why.find("length") != std::string::npos);

  FrameReader bytewise(1000);
  auto steps = feed_bytewise(bytewise, std::string(100, 'x'));
  error_of(steps);
  CHECK(steps.size() == 1);

  // Too many digits, even with a newline.
  FrameReader digits(1000);
  error_of(feed_all(digits, std::string(30, '9') + "\n"));
}

TEST_CASE("a length above the maximum is refused before allocating", "[framing][errors]") {
  FrameReader r(1024);
  g_largest_allocation = 0;
  auto steps = feed_all(r, "1000000000000\n");
  if (FRAMING_TEST_TRACKS_ALLOCATIONS) CHECK(g_largest_allocation < 4096);
  REQUIRE(steps.size() == 1);
  std::string why = error_of(steps);
  CHECK(why.find("1024") != std::string::npos);
  CHECK(why.find("1000000000000") != std::string::npos);
  CHECK(why.find("limit") != std::string::npos);

  // The largest 64-bit length.
  FrameReader big(1024);
  g_largest_allocation = 0;
  error_of(feed_all(big, "18446744073709551615\n"));
  if (FRAMING_TEST_TRACKS_ALLOCATIONS) CHECK(g_largest_allocation < 4096);

  // Exactly the maximum is fine, one more is not.
  FrameReader edge(10);
  CHECK(feed_all(edge, "10\n0123456789") == std::vector<Step>{request("0123456789")});
  FrameReader over(10);
  CHECK(error_of(feed_all(over, "11\n0123456789a")).find("10") != std::string::npos);
}

// Was a bug (server/net/framing.cpp FrameReader::next): a length line of 20 digits passes the
// "at most 20 digits" check but std::stoull throws std::out_of_range for values above
// 18446744073709551615 (e.g. "99999999999999999999"). The exception escapes next() instead of
// an Event::Error with a framing message. Expected: Event::Error ("exceeds the limit").
TEST_CASE("a 20-digit length beyond 64 bits is an error, not an exception", "[framing][errors]") {
  for (const char* line : {"99999999999999999999\n", "18446744073709551616\n"}) {
    INFO(line);
    FrameReader r(1024);
    std::vector<Step> steps;
    CHECK_NOTHROW(steps = feed_all(r, line));
    REQUIRE(steps.size() == 1);
    CHECK(steps[0].event == Event::Error);
  }
}

TEST_CASE("mid_request says whether part of a request has arrived", "[framing]") {
  FrameReader r(1000);
  CHECK_FALSE(r.mid_request());
  CHECK(feed_all(r, "1").empty());
  CHECK(r.mid_request());  // part of the length line
  CHECK(feed_all(r, "0\n").empty());
  CHECK(r.mid_request());  // length read, payload missing
  CHECK(feed_all(r, "01234").empty());
  CHECK(r.mid_request());
  CHECK(feed_all(r, "56789") == std::vector<Step>{request("0123456789")});
  CHECK_FALSE(r.mid_request());  // between requests: an EOF now is clean

  CHECK(feed_all(r, "0\n") == std::vector<Step>{request("")});
  CHECK_FALSE(r.mid_request());

  CHECK(feed_all(r, "2\nab3") == std::vector<Step>{request("ab")});
  CHECK(r.mid_request());  // the next length line has begun
  CHECK(feed_all(r, "\nxyz") == std::vector<Step>{request("xyz")});
  CHECK_FALSE(r.mid_request());

  FrameReader h(1000);
  CHECK(feed_all(h, "EXCHANGE-SESSION 1\n") == std::vector<Step>{kHello});
  CHECK_FALSE(h.mid_request());  // a session with no request yet
  CHECK(feed_all(h, "3\r\n").empty());
  CHECK(h.mid_request());
}

TEST_CASE(
    "a client pipelining without pause (every read ending inside a request) does not grow "
    "the buffer: it holds only what is not yet framed",
    "[framing]") {
  FrameReader r(1000);
  const std::string one = "10\n0123456789";  // 13 bytes
  std::string stream;
  for (int i = 0; i < 10000; ++i) stream += one;
  std::size_t framed = 0, largest = 0;
  // 20-byte reads: each ends inside a request, so the buffer is never empty between reads.
  for (std::size_t at = 0; at < stream.size(); at += 20) {
    framed += feed_all(r, stream.substr(at, 20)).size();
    largest = std::max(largest, r.buffered());
  }
  CHECK(framed == 10000);
  CHECK(largest < 40);  // before: the whole stream, 130,000 bytes
  CHECK(r.unframed() == 0);
}

TEST_CASE("discard drops what is buffered", "[framing]") {
  FrameReader r(1 << 20);
  feed_all(r, "500000\n" + std::string(400000, 'x'));
  CHECK(r.buffered() > 400000);
  r.discard();
  CHECK(r.buffered() == 0);
  CHECK(r.unframed() == 0);
}

TEST_CASE("frame_reply: persistent replies are length-framed", "[framing][reply]") {
  const std::string xml =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<results>\xc3\xa9</results>\n";
  CHECK(net::frame_reply(xml, false) == xml);
  std::string framed = net::frame_reply(xml, true);
  CHECK(framed == std::to_string(xml.size()) + "\n" + xml);
  CHECK(framed.rfind("61\n", 0) == 0);  // bytes, not characters
  // A client reading replies with the same framing gets the document back.
  FrameReader r(1000);
  CHECK(feed_all(r, framed + net::frame_reply("", true)) ==
        std::vector<Step>{request(xml), request("")});
  CHECK(net::frame_reply("", true) == "0\n");
  CHECK(net::frame_reply("", false).empty());
}

TEST_CASE("framing_error_reply is a <results><error> document", "[framing][reply]") {
  const std::string why = "Bad framing: got '<&\"x\">'";
  std::string reply = net::framing_error_reply(why);
  CHECK(reply.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>", 0) == 0);
  pugi::xml_document doc;
  REQUIRE(doc.load_string(reply.c_str()));
  pugi::xml_node results = doc.document_element();
  CHECK(std::string(results.name()) == "results");
  pugi::xml_node error = results.first_child();
  CHECK(std::string(error.name()) == "error");
  CHECK(std::string(error.child_value()) == why);
  CHECK_FALSE(error.next_sibling());

  // The message of a real framing error fits in the reply too.
  FrameReader r(10);
  std::string msg = error_of(feed_all(r, "<create/>\n"));
  pugi::xml_document doc2;
  REQUIRE(doc2.load_string(net::framing_error_reply(msg).c_str()));
  CHECK(std::string(doc2.document_element().child("error").child_value()) == msg);
}

// Issue 47: on 6f484b8 the reader kept the logon line, key included, in its buffer while more
// bytes followed it (only the session's own copy was wiped).
TEST_CASE("a logon line's key is wiped from the buffer once taken", "[framing][auth]") {
  const std::string key = "0123456789abcdef-the-key";
  for (bool bytewise : {false, true}) {
    CAPTURE(bytewise);
    FrameReader r(1000);
    const std::string bytes = "EXCHANGE-LOGON 1 bot-7 " + key + "\nEXCHANGE-SESSION 1\n5\nhel";
    if (bytewise) {
      for (char c : bytes) r.feed(&c, 1);
    } else {
      r.feed(bytes.data(), bytes.size());
    }
    std::string out;
    REQUIRE(r.next(out) == FrameReader::Event::Logon);
    CHECK(out == " 1 bot-7 " + key);
    CHECK(std::string(r.held()).find(key) == std::string::npos);
    CHECK(std::string(r.held()).find("-the-") == std::string::npos);
    REQUIRE(r.next(out) == FrameReader::Event::SessionHello);
    CHECK(r.next(out) == FrameReader::Event::NeedMore);  // the request's rest is still held
    CHECK(r.held().size() > 0);
  }
}
