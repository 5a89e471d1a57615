#include "protocol/request_shape.hpp"

#include <array>

namespace protocol {
namespace {

constexpr std::array<std::string_view, 6> kKinds = {"order",   "query",  "cancel",
                                                    "account", "symbol", "replace"};

bool name_char(char c) {
  return c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != '/' && c != '>';
}

// Position just after `end` searched from `from`, or npos.
std::size_t skip_past(std::string_view s, std::size_t from, std::string_view end) {
  std::size_t at = s.find(end, from);
  return at == std::string_view::npos ? at : at + end.size();
}

}  // namespace

RequestShape scan_request(std::string_view s) {
  std::string_view root;
  std::array<unsigned, kKinds.size() + 1> counts{};  // the last one is "other"
  int depth = 0;
  std::size_t i = 0;
  while ((i = s.find('<', i)) != std::string_view::npos) {
    ++i;
    if (i >= s.size()) break;
    char c = s[i];
    if (c == '?') {  // declaration or processing instruction
      i = skip_past(s, i, "?>");
    } else if (c == '!') {  // comment, CDATA, DOCTYPE
      if (s.substr(i, 3) == "!--")
        i = skip_past(s, i, "-->");
      else if (s.substr(i, 8) == "![CDATA[")
        i = skip_past(s, i, "]]>");
      else
        i = skip_past(s, i, ">");
    } else if (c == '/') {  // end tag
      --depth;
      i = skip_past(s, i, ">");
    } else {  // start tag: name, attributes (quoted values may hold '>'), then '>' or '/>'
      std::size_t start = i;
      while (i < s.size() && name_char(s[i])) ++i;
      std::string_view name = s.substr(start, i - start);
      if (depth == 0 && root.empty()) {
        root = name;
      } else if (depth == 1) {
        std::size_t k = 0;
        while (k < kKinds.size() && kKinds[k] != name) ++k;
        ++counts[k];
      }
      char quote = 0;
      bool self_closing = false;
      for (; i < s.size(); ++i) {
        char d = s[i];
        if (quote) {
          if (d == quote) quote = 0;
        } else if (d == '"' || d == '\'') {
          quote = d;
        } else if (d == '>') {
          self_closing = i > start && s[i - 1] == '/';
          break;
        }
      }
      if (!self_closing) ++depth;
    }
    if (i == std::string_view::npos) break;
  }

  RequestShape shape;
  for (unsigned n : counts) shape.children += n;
  if (root != "create" && root != "transactions") {
    shape.key = "other";
    return shape;
  }
  shape.key.reserve(40);
  shape.key.append(root).push_back(':');
  bool first = true;
  for (std::size_t k = 0; k < counts.size(); ++k) {
    if (!counts[k]) continue;
    if (!first) shape.key.push_back(',');
    first = false;
    shape.key.append(k < kKinds.size() ? kKinds[k] : std::string_view("other"));
    shape.key.append(std::to_string(counts[k]));
  }
  return shape;
}

}  // namespace protocol
