#pragma once
// Sending orders of every type to a running server and reading the replies in a form a test can
// compare with what docs/PROTOCOL.md writes: each item of <results> on one line of text, without
// the document's whitespace, attributes in the order the server wrote them. Balances and
// positions are read through the protocol itself: a fill-or-kill order the account cannot pay
// for is refused with a text that states the balance (or the position), and nothing of it is
// applied (sections 4.5 and 4.6).
#include <cctype>
#include <stdexcept>
#include <string>

#include <pugixml.hpp>

#include "support/reply_xml.hpp"
#include "support/wire_client.hpp"

namespace testing_support {

// One element as text: <name a="v" …/>, or <name …>text and children</name>. With
// `keep_times` false every `time` attribute made of digits only is written as "T" (a request's
// time is the server's clock); anything else in it stays, so a check shows it.
inline void append_compact(std::string& out, const pugi::xml_node& node, bool keep_times) {
  out += '<';
  out += node.name();
  for (const pugi::xml_attribute& a : node.attributes()) {
    std::string value = a.value();
    if (!keep_times && std::string(a.name()) == "time" && !value.empty()) {
      bool digits = true;
      for (char c : value) digits = digits && std::isdigit(static_cast<unsigned char>(c));
      if (digits) value = "T";
    }
    out += ' ';
    out += a.name();
    out += "=\"" + value + "\"";
  }
  std::string inner;
  for (const pugi::xml_node& child : node.children()) {
    if (child.type() == pugi::node_element) {
      append_compact(inner, child, keep_times);
    } else if (child.type() == pugi::node_pcdata || child.type() == pugi::node_cdata) {
      // Whitespace between elements is layout, not content.
      std::string text = child.value();
      bool blank = true;
      for (char c : text) blank = blank && std::isspace(static_cast<unsigned char>(c));
      if (!blank) inner += text;
    }
  }
  if (inner.empty())
    out += "/>";
  else
    out += '>' + inner + "</" + node.name() + '>';
}

// The items of a reply, each compacted, concatenated: `<opened sym="X" … id="3"/>`.
inline std::string compact_reply(const std::string& reply, bool keep_times = false) {
  ParsedReply r;
  parse_reply(reply, r);
  std::string out;
  for (const pugi::xml_node& item : r.items) {
    append_compact(out, item, keep_times);
  }
  return out;
}

class Desk {
 public:
  explicit Desk(unsigned short port) : port_(port) {}

  // <transactions id="ACCOUNT">CHILDREN</transactions> on its own connection: the reply.
  std::string raw(const std::string& account, const std::string& children) const {
    return send_request(port_, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<transactions id=\"" +
                                   account + "\">" + children + "</transactions>");
  }
  // The same, compacted with times as T.
  std::string tx(const std::string& account, const std::string& children) const {
    return compact_reply(raw(account, children));
  }
  // A <create>'s reply, compacted.
  std::string create(const std::string& children) const {
    return compact_reply(send_request(
        port_, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<create>" + children + "</create>"));
  }
  // Sends one <order>/<replace> child; returns the id of its <opened>, or throws with the reply.
  std::string open(const std::string& account, const std::string& child) const {
    std::string reply = raw(account, child);
    ParsedReply r;
    parse_reply(reply, r);
    if (r.items.size() != 1 || std::string(r.items[0].name()) != "opened")
      throw std::runtime_error("not opened: " + child + " -> " + reply);
    return r.items[0].attribute("id").value();
  }
  std::string status(const std::string& account, const std::string& id) const {
    return tx(account, "<query id=\"" + id + "\"/>");
  }

  // The account's cash, as the server states it when it refuses a buy the account cannot pay
  // (a fill-or-kill order: nothing of it is applied). SYM must exist.
  std::string balance(const std::string& account, const std::string& sym = "X") const {
    return after(account,
                 "<order sym=\"" + sym + "\" amount=\"1\" limit=\"999999999999\" tif=\"FOK\"/>",
                 "Insufficient funds: order needs 999999999999, balance is ");
  }
  // The account's position in SYM, the same way with a sell it cannot cover.
  std::string position(const std::string& account, const std::string& sym = "X") const {
    return after(account,
                 "<order sym=\"" + sym + "\" amount=\"-999999999999\" limit=\"1\" tif=\"FOK\"/>",
                 "Insufficient shares: order sells 999999999999, position is ");
  }

 private:
  std::string after(const std::string& account, const std::string& child,
                    const std::string& prefix) const {
    std::string reply = raw(account, child);
    std::string text = single_error(reply);
    if (text.rfind(prefix, 0) != 0) return "(unexpected reply: " + reply + ")";
    return text.substr(prefix.size());
  }
  unsigned short port_;
};

// Shorthands for writing the document's requests and replies.
inline std::string q(const std::string& name, const std::string& value) {
  return " " + name + "=\"" + value + "\"";
}

// The XML of requests and of the status children the order-types tests send and expect
// (times as compact_reply writes them: T).
inline std::string account(const std::string& id, const std::string& balance) {
  return "<account id=\"" + id + "\" balance=\"" + balance + "\"/>";
}
inline std::string shares(const std::string& sym, const std::string& id, const std::string& n) {
  return "<symbol sym=\"" + sym + "\"><account id=\"" + id + "\">" + n + "</account></symbol>";
}
inline std::string order(const std::string& sym, const std::string& amount,
                         const std::string& rest) {
  return "<order sym=\"" + sym + "\" amount=\"" + amount + "\"" + rest + "/>";
}
inline std::string limit_order(const std::string& sym, const std::string& amount,
                               const std::string& limit) {
  return order(sym, amount, q("limit", limit));
}
inline std::string replace(const std::string& id, const std::string& shares,
                           const std::string& limit) {
  return "<replace id=\"" + id + "\" shares=\"" + shares + "\" limit=\"" + limit + "\"/>";
}
inline std::string status(const std::string& id, const std::string& children) {
  return "<status id=\"" + id + "\">" + children + "</status>";
}
inline std::string open_(const std::string& n) { return "<open shares=\"" + n + "\"/>"; }
inline std::string executed(const std::string& n, const std::string& price) {
  return "<executed shares=\"" + n + "\" price=\"" + price + "\" time=\"T\"/>";
}
inline std::string canceled(const std::string& n) {
  return "<canceled shares=\"" + n + "\" time=\"T\"/>";
}
inline std::string waiting(const std::string& n, const std::string& stop) {
  return "<waiting shares=\"" + n + "\" stop=\"" + stop + "\"/>";
}

}  // namespace testing_support
