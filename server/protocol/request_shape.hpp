#pragma once
// A cheap look at a request payload, without parsing it: the root element and the kinds of its
// direct children. Used by the concurrency models for the FOTP's request classes and for
// --simulated-io-ms-per-child, before a worker parses the payload properly (parse.cpp). It
// lives beside the parser because it must name requests the way the parser does; a malformed
// payload here only gets an odd class (or none), never an error.
#include <string>
#include <string_view>

namespace protocol {

struct RequestShape {
  // Canonical request class: the root element, a colon, then the counts of its children by
  // kind in a fixed order (order, query, cancel, account, symbol, replace, other), zero counts left
  // out: "transactions:order2,query1", "create:account3,symbol1", "transactions:". A root
  // other than create or transactions is the class "other", so clients cannot grow the
  // class table without bound.
  std::string key;
  // Direct children of the root element (each <symbol> counts once, however many <account>s
  // it holds).
  unsigned children = 0;
};

RequestShape scan_request(std::string_view payload);

}  // namespace protocol
