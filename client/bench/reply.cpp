#include "bench/reply.hpp"

#include <algorithm>
#include <cctype>

#include "wire/xml_escape.hpp"

namespace exch::bench {

const std::string* XmlNode::attr(std::string_view key) const {
  for (const auto& kv : attrs)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
         c == ':' || static_cast<unsigned char>(c) >= 0x80;
}

std::string decode_entities(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    auto semi = s.find(';', i);
    if (semi == std::string_view::npos || semi - i > 10) {
      out += s[i];
      continue;
    }
    std::string_view ent = s.substr(i + 1, semi - i - 1);
    if (ent == "lt")
      out += '<';
    else if (ent == "gt")
      out += '>';
    else if (ent == "amp")
      out += '&';
    else if (ent == "quot")
      out += '"';
    else if (ent == "apos")
      out += '\'';
    else if (!ent.empty() && ent[0] == '#') {
      unsigned long code = 0;
      bool hex = ent.size() > 1 && (ent[1] == 'x' || ent[1] == 'X');
      for (std::size_t k = hex ? 2 : 1; k < ent.size(); ++k) {
        char c = ent[k];
        int v = (c >= '0' && c <= '9')          ? c - '0'
                : (hex && c >= 'a' && c <= 'f') ? c - 'a' + 10
                : (hex && c >= 'A' && c <= 'F') ? c - 'A' + 10
                                                : -1;
        if (v < 0) break;
        code = code * (hex ? 16 : 10) + static_cast<unsigned long>(v);
        if (code > 0x10FFFF) break;
      }
      if (code < 0x80)
        out += static_cast<char>(code);
      else
        out += '?';  // non-ASCII references do not occur in replies we judge
    } else {
      out.append(s.data() + i, semi - i + 1);
    }
    i = semi;
  }
  return out;
}

std::string trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return std::string(s.substr(b, e - b));
}

class Parser {
 public:
  explicit Parser(std::string_view t) : t_(t) {}

  std::optional<XmlNode> document(std::string* error) {
    skip_misc();
    if (pos_ >= t_.size() || t_[pos_] != '<') return fail(error, "no root element");
    XmlNode root;
    if (!element(root, 0)) return fail(error, error_);
    skip_misc();
    if (pos_ != t_.size()) return fail(error, "content after the root element");
    return root;
  }

 private:
  std::optional<XmlNode> fail(std::string* error, const std::string& why) {
    if (error) *error = why.empty() ? error_ : why;
    return std::nullopt;
  }

  bool starts(std::string_view s) const { return t_.substr(pos_, s.size()) == s; }

  // Skips whitespace, <?..?>, <!--..-->, <!DOCTYPE ..>.
  void skip_misc() {
    for (;;) {
      while (pos_ < t_.size() && is_space(t_[pos_])) ++pos_;
      if (starts("<?")) {
        auto e = t_.find("?>", pos_);
        pos_ = e == std::string_view::npos ? t_.size() : e + 2;
      } else if (starts("<!--")) {
        auto e = t_.find("-->", pos_);
        pos_ = e == std::string_view::npos ? t_.size() : e + 3;
      } else if (starts("<!DOCTYPE")) {
        auto e = t_.find('>', pos_);
        pos_ = e == std::string_view::npos ? t_.size() : e + 1;
      } else {
        return;
      }
    }
  }

  std::string name() {
    std::size_t b = pos_;
    while (pos_ < t_.size() && is_name_char(t_[pos_])) ++pos_;
    return std::string(t_.substr(b, pos_ - b));
  }

  bool element(XmlNode& node, int depth) {
    if (depth > 64) return error("nesting too deep");
    ++pos_;  // '<'
    node.name = name();
    if (node.name.empty()) return error("missing element name");
    for (;;) {
      while (pos_ < t_.size() && is_space(t_[pos_])) ++pos_;
      if (pos_ >= t_.size()) return error("unterminated start tag <" + node.name);
      if (starts("/>")) {
        pos_ += 2;
        return true;
      }
      if (t_[pos_] == '>') {
        ++pos_;
        break;
      }
      std::string key = name();
      if (key.empty()) return error("bad attribute in <" + node.name);
      while (pos_ < t_.size() && is_space(t_[pos_])) ++pos_;
      if (pos_ >= t_.size() || t_[pos_] != '=') return error("attribute without value");
      ++pos_;
      while (pos_ < t_.size() && is_space(t_[pos_])) ++pos_;
      if (pos_ >= t_.size() || (t_[pos_] != '"' && t_[pos_] != '\''))
        return error("unquoted attribute value");
      char q = t_[pos_++];
      auto e = t_.find(q, pos_);
      if (e == std::string_view::npos) return error("unterminated attribute value");
      node.attrs.emplace_back(std::move(key), decode_entities(t_.substr(pos_, e - pos_)));
      pos_ = e + 1;
    }
    std::string text;
    for (;;) {
      auto lt = t_.find('<', pos_);
      if (lt == std::string_view::npos) return error("unclosed <" + node.name + ">");
      text += decode_entities(t_.substr(pos_, lt - pos_));
      pos_ = lt;
      if (starts("</")) {
        pos_ += 2;
        std::string end = name();
        while (pos_ < t_.size() && is_space(t_[pos_])) ++pos_;
        if (end != node.name || pos_ >= t_.size() || t_[pos_] != '>')
          return error("mismatched </" + end + "> for <" + node.name + ">");
        ++pos_;
        node.text = trim(text);
        return true;
      }
      if (starts("<!--")) {
        auto e = t_.find("-->", pos_);
        if (e == std::string_view::npos) return error("unterminated comment");
        pos_ = e + 3;
        continue;
      }
      if (starts("<![CDATA[")) {
        auto e = t_.find("]]>", pos_);
        if (e == std::string_view::npos) return error("unterminated CDATA");
        text.append(t_.substr(pos_ + 9, e - pos_ - 9));
        pos_ = e + 3;
        continue;
      }
      if (starts("<?")) {
        auto e = t_.find("?>", pos_);
        if (e == std::string_view::npos) return error("unterminated PI");
        pos_ = e + 2;
        continue;
      }
      node.children.emplace_back();
      if (!element(node.children.back(), depth + 1)) return false;
    }
  }

  bool error(std::string why) {
    if (error_.empty()) error_ = std::move(why);
    return false;
  }

  std::string_view t_;
  std::size_t pos_ = 0;
  std::string error_;
};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

void render(const XmlNode& n, std::string& out, bool blank_id) {
  out += '<';
  out += n.name;
  for (const auto& [k, v] : n.attrs) {
    if (k == "time") continue;
    out += ' ';
    out += k;
    out += "=\"";
    if (!(blank_id && k == "id")) out += wire::xml_escaped(v);
    out += '"';
  }
  out += '>';
  out += wire::xml_escaped(n.text);
  for (const auto& c : n.children) render(c, out, false);
  out += "</";
  out += n.name;
  out += '>';
}

}  // namespace

std::optional<XmlNode> parse_xml(std::string_view text, std::string* error) {
  return Parser(text).document(error);
}

ReplyVerdict classify_reply(std::string_view reply, const std::vector<ChildKind>& kinds,
                            const std::vector<std::string>& reject_words) {
  ReplyVerdict v;
  std::string why;
  auto root = parse_xml(reply, &why);
  if (!root || root->name != "results") {
    v.error_items = 1;
    v.first_error =
        root ? "reply root is <" + root->name + ">, not <results>" : "unparseable reply: " + why;
    v.error_texts.push_back(v.first_error);
    return v;
  }
  v.parsed = true;
  v.positional = root->children.size() == kinds.size();
  if (v.positional) v.opened_ids.assign(kinds.size(), std::string());
  for (std::size_t i = 0; i < root->children.size(); ++i) {
    const XmlNode& c = root->children[i];
    if (c.name != "error") {
      ++v.ok_items;
      if (v.positional && ((c.name == "opened" && kinds[i] == ChildKind::Order) ||
                           (c.name == "replaced" && kinds[i] == ChildKind::Replace))) {
        if (const std::string* id = c.attr("id")) v.opened_ids[i] = *id;
      }
      continue;
    }
    bool rejected = false;
    if (v.positional) {
      if (kinds[i] == ChildKind::Cancel || kinds[i] == ChildKind::Replace) {
        rejected = true;
      } else if (kinds[i] == ChildKind::Order) {
        std::string t = lower(c.text);
        for (const auto& w : reject_words)
          if (!w.empty() && t.find(lower(w)) != std::string::npos) rejected = true;
      }
    }
    std::string text = c.text.empty() ? "<error/>" : c.text;
    if (rejected) {
      ++v.rejected_items;
      v.rejected_texts.push_back(std::move(text));
    } else {
      ++v.error_items;
      if (v.first_error.empty()) v.first_error = text;
      v.error_texts.push_back(std::move(text));
    }
  }
  if (root->children.empty() && !kinds.empty()) {
    v.error_items = 1;
    v.first_error = "empty <results>";
    v.error_texts.assign(1, v.first_error);
  }
  return v;
}

std::string normalize_for_vote(std::string_view reply, const std::vector<ChildKind>& kinds) {
  auto root = parse_xml(reply);
  if (!root) return trim(reply);
  bool positional = root->children.size() == kinds.size();
  std::string out = "<" + root->name + ">";
  for (std::size_t i = 0; i < root->children.size(); ++i) {
    const XmlNode& c = root->children[i];
    bool server_made_id =
        c.name == "opened" || c.name == "status" || c.name == "canceled" || c.name == "replaced";
    if (c.name == "error" && positional &&
        (kinds[i] == ChildKind::Query || kinds[i] == ChildKind::Cancel ||
         kinds[i] == ChildKind::Replace))
      server_made_id = true;
    render(c, out, server_made_id);
  }
  out += "</" + root->name + ">";
  return out;
}

}  // namespace exch::bench
