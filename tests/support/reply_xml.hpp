#pragma once
// Reading replies in tests: parse with pugixml and pick elements.
#include <stdexcept>
#include <string>
#include <vector>

#include <pugixml.hpp>

namespace testing_support {

struct ParsedReply {
  pugi::xml_document doc;
  pugi::xml_node results;
  std::vector<pugi::xml_node> items;  // children of <results>, in order
};

inline void parse_reply(const std::string& xml, ParsedReply& out) {
  if (!out.doc.load_buffer(xml.data(), xml.size()))
    throw std::runtime_error("reply is not XML: " + xml);
  out.results = out.doc.child("results");
  if (!out.results) throw std::runtime_error("reply has no <results>: " + xml);
  for (auto child : out.results.children())
    if (child.type() == pugi::node_element) out.items.push_back(child);
}

// The name of each item of a reply, in order: "created,opened,error".
inline std::string item_kinds(const std::string& reply) {
  ParsedReply r;
  parse_reply(reply, r);
  std::string out;
  for (auto& item : r.items) out += (out.empty() ? "" : ",") + std::string(item.name());
  return out;
}

// The text of the only <error> of a reply, or a description, in parentheses, of what came
// instead (so a failed check says what the server sent).
inline std::string single_error(const std::string& reply) {
  ParsedReply r;
  try {
    parse_reply(reply, r);
  } catch (const std::exception& e) {
    return std::string("(not a reply: ") + e.what() + ")";
  }
  if (r.items.size() != 1 || std::string(r.items[0].name()) != "error")
    return "(not a single <error>: " + reply + ")";
  return r.items[0].text().get();
}

}  // namespace testing_support
