// A tiny, tolerant XML reader for <results> replies: enough to count
// <opened>/<error> children, harvest order ids, and normalise replies for the
// replica vote. Not a validating parser.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace exch::bench {

struct XmlNode {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attrs;  // in document order, decoded
  std::vector<XmlNode> children;
  std::string text;  // direct character data, entity-decoded, trimmed

  const std::string* attr(std::string_view key) const;
};

// Parses one document (prolog, comments and DOCTYPE skipped). Returns nothing
// and sets *error if it is not well-formed enough to walk.
std::optional<XmlNode> parse_xml(std::string_view text, std::string* error = nullptr);

// What a request child was, so replies can be judged positionally
// (PROTOCOL.md: replies come in the order of the children that caused them).
enum class ChildKind { Order, Query, Cancel, Replace, CreateItem };

struct ReplyVerdict {
  bool parsed = false;      // a <results> document
  bool positional = false;  // one reply element per request child
  int ok_items = 0;         // non-error children
  int rejected_items = 0;   // expected business rejections (see classify_reply)
  int error_items = 0;      // any other <error>
  std::string first_error;  // text of the first unexpected error, for messages
  // The text of every rejection and every other error, in reply order (for the
  // tally by reason): rejected_texts.size() == rejected_items and
  // error_texts.size() == error_items.
  std::vector<std::string> rejected_texts;
  std::vector<std::string> error_texts;
  // For each request child, the id of its <opened id=".."> (an order's) or of its
  // <replaced id=".."> (a replace's), empty otherwise; only filled when `positional`.
  std::vector<std::string> opened_ids;
};

// Judges a reply to a request whose children were `kinds`.
// An <error> is a "rejection" (a served request, not a failure) when it answers
//  - an order and its text contains one of `reject_words` (case-insensitive), or
//  - a cancel or a replace (the order may have been filled or canceled meanwhile;
//    a replace may also want more cash or shares than the account has).
ReplyVerdict classify_reply(std::string_view reply, const std::vector<ChildKind>& kinds,
                            const std::vector<std::string>& reject_words);

// Canonical form for comparing replicas: whitespace between elements dropped,
// text trimmed, every `time` attribute removed, and the `id` value blanked on
// <opened>, <status>, <canceled> and <replaced> elements and on <error> elements
// answering a query, cancel or replace (those ids are server-made and differ
// between replicas).
// Unparseable replies are returned trimmed, unchanged otherwise.
std::string normalize_for_vote(std::string_view reply, const std::vector<ChildKind>& kinds);

}  // namespace exch::bench
