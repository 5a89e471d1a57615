// protocol::scan_request: the cheap look the concurrency models take at a payload (request
// classes for fotp, children for --simulated-io-ms-per-child), agreeing with the parser's
// names, bounded in what it can produce, never throwing on garbage.
#include "protocol/request_shape.hpp"

#include <string>

#include <catch2/catch.hpp>

using protocol::scan_request;

TEST_CASE("Request classes count the root's children by kind", "[unit][shape]") {
  auto s = scan_request(
      "<?xml version=\"1.0\"?><transactions id=\"1\"><order sym=\"A\" amount=\"1\" limit=\"1\"/>"
      "<query id=\"3\"/><order sym=\"B\" amount=\"2\" limit=\"1\"/></transactions>");
  CHECK(s.key == "transactions:order2,query1");
  CHECK(s.children == 3);
  s = scan_request(
      "<create><account id=\"1\" balance=\"5\"/><symbol sym=\"X\"><account id=\"1\">5</account>"
      "<account id=\"2\">5</account></symbol></create>");
  CHECK(s.key == "create:account1,symbol1");  // a <symbol> counts once
  CHECK(s.children == 2);
  CHECK(scan_request("<transactions id=\"1\"></transactions>").key == "transactions:");
}

TEST_CASE("Anything else is one class, so clients cannot grow the class table", "[unit][shape]") {
  CHECK(scan_request("<foo><bar/></foo>").key == "other");
  CHECK(scan_request("<foo2/>").key == "other");
  CHECK(scan_request("").key == scan_request("garbage <<<").key);
  // Unknown children are counted as "other", not by their names.
  const auto s = scan_request("<transactions id=\"1\"><a/><b/><c/></transactions>");
  CHECK(s.children == 3);
  CHECK(s.key == "transactions:other3");
}
