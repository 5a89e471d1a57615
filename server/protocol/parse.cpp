#include "protocol/parse.hpp"

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include <pugixml.hpp>

#include "protocol/utf8.hpp"
#include "protocol/xml_chars.hpp"

namespace protocol {
namespace {

using market::Decimal;
using market::Reason;
using market::Reject;

// A reject about the element, attribute or field `name` (in `parent`).
Reject named(Reason reason, std::string name, std::string parent = {}) {
  Reject r(reason);
  r.name = std::move(name);
  r.parent = std::move(parent);
  return r;
}

// A reject for a request past a parse limit: `count` where at most `limit` is allowed.
Reject over(Reason reason, std::size_t count, std::size_t limit) {
  Reject r(reason);
  r.count = count;
  r.limit = limit;
  return r;
}

// pugixml takes a 32 KiB page from malloc for every document it parses, and glibc's malloc
// pays for a request that size with malloc_consolidate: about half of parse()'s CPU, measured
// (docs/notes/performance-history.md, "Per-order CPU budget, before and after issue 21"). So
// each thread keeps the last page-sized block pugixml freed for its next document: one block
// (about 32 KiB) per thread that parses.
// Installed during static initialisation, before any document exists, so every block
// pugixml frees was allocated here (each carries its size in front).
class XmlMemory {
 public:
  static void* allocate(std::size_t size) {
    Cache& c = cache();
    if (c.block && size == c.size) return data(std::exchange(c.block, nullptr));
    void* block = std::malloc(kHeader + size);
    if (!block) return nullptr;
    *static_cast<std::size_t*>(block) = size;
    return data(block);
  }
  static void deallocate(void* ptr) {
    if (!ptr) return;
    void* block = static_cast<char*>(ptr) - kHeader;
    const std::size_t size = *static_cast<std::size_t*>(block);
    Cache& c = cache();
    if (!c.block && size >= kPageFrom && size < 2 * kPageFrom) {
      c.block = block;
      c.size = size;
      return;
    }
    std::free(block);
  }

 private:
  static constexpr std::size_t kHeader = alignof(std::max_align_t);
  static constexpr std::size_t kPageFrom = 32768;  // pugixml's page, with its header
  struct Cache {
    void* block = nullptr;
    std::size_t size = 0;
    ~Cache() { std::free(block); }
  };
  static Cache& cache() {
    thread_local Cache c;
    return c;
  }
  static void* data(void* block) { return static_cast<char*>(block) + kHeader; }
};

const bool kXmlMemoryInstalled =
    (pugi::set_memory_management_functions(XmlMemory::allocate, XmlMemory::deallocate), true);

bool all_of(std::string_view s, bool (*pred)(char)) {
  if (s.empty()) return false;
  for (char c : s)
    if (!pred(c)) return false;
  return true;
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alnum(char c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

std::string_view trim(std::string_view s) {
  const char* ws = " \t\r\n";
  auto b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// The whole text content of an element that must hold only text (comments may split it).
std::string text_of(const pugi::xml_node& node, std::optional<Reject>& invalid) {
  std::string text;
  for (const pugi::xml_node& child : node.children()) {
    if (child.type() == pugi::node_pcdata || child.type() == pugi::node_cdata)
      text += child.value();
    else if (child.type() == pugi::node_element && !invalid)
      invalid = named(Reason::ElementInsideText, child.name(), node.name());
  }
  return text;
}

// The per-element limits and XML's rule against repeated attributes (pugixml accepts an
// element with the same attribute twice). Linear in the request: the attribute count is
// capped before the pairwise comparison, so one element costs at most max_attributes^2 / 2
// name comparisons. Walks the tree without recursion: a request may nest deeply.
std::optional<Reject> check_elements(const pugi::xml_node& root, const ParseLimits& limits) {
  pugi::xml_node node = root;
  while (node) {
    std::size_t count = 0;
    for (pugi::xml_attribute a = node.first_attribute(); a; a = a.next_attribute()) {
      if (++count > limits.max_attributes) {
        Reject r = named(Reason::TooManyAttributes, node.name());
        r.limit = limits.max_attributes;
        return r;
      }
      const std::size_t length = std::strlen(a.value());
      if (std::strcmp(a.name(), "id") == 0 && length > limits.max_id_length)
        return over(Reason::IdTooLong, length, limits.max_id_length);
      if (std::strcmp(a.name(), "sym") == 0 && length > limits.max_symbol_length)
        return over(Reason::SymbolTooLong, length, limits.max_symbol_length);
    }
    for (pugi::xml_attribute a = node.first_attribute(); a; a = a.next_attribute())
      for (pugi::xml_attribute b = a.next_attribute(); b; b = b.next_attribute())
        if (std::strcmp(a.name(), b.name()) == 0) return Reject(Reason::RepeatedAttribute);
    if (node.first_child()) {
      node = node.first_child();
      continue;
    }
    while (node && node != root && !node.next_sibling()) node = node.parent();
    node = node == root ? pugi::xml_node() : node.next_sibling();
  }
  return std::nullopt;
}

Attributes attributes_of(const pugi::xml_node& node) {
  Attributes out;
  // Counted first: an order's three attributes grew the vector three times.
  std::size_t n = 0;
  for (pugi::xml_attribute a = node.first_attribute(); a; a = a.next_attribute()) ++n;
  out.reserve(n);
  for (const pugi::xml_attribute& a : node.attributes()) out.emplace_back(a.name(), a.value());
  return out;
}

// Reads a required attribute; records the first problem in `invalid`.
std::string required(const pugi::xml_node& node, const char* name, std::optional<Reject>& invalid) {
  pugi::xml_attribute a = node.attribute(name);
  if (!a && !invalid) invalid = named(Reason::MissingAttribute, name);
  return a.value();
}

// `field` names the number in the reply: balance, amount or limit.
void parse_number(std::string_view text, const char* field, Decimal& out,
                  std::optional<Reject>& invalid) {
  if (invalid) return;
  if (const auto why = Decimal::parse(text, out)) {
    invalid = named(*why, field);
    invalid->value = std::string(text);
  }
}

// Records `reason` as the item's problem unless it already has one.
void refuse(std::optional<Reject>& invalid, Reason reason) {
  if (!invalid) invalid = Reject(reason);
}

void parse_order_id(std::string_view text, TransactionItem& item) {
  if (item.invalid) return;
  if (!all_of(text, is_digit)) {
    item.invalid = Reject(Reason::InvalidOrderId);
    item.invalid->value = std::string(text);
    return;
  }
  std::string_view digits = text;
  while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
  // An id beyond int64 names no order; answered like any unknown id.
  if (digits.size() > 18) {
    item.order_id_exists = false;
    return;
  }
  market::OrderId id = 0;
  for (char c : digits) id = id * 10 + (c - '0');
  item.order_id = id;
}

void parse_create_account(const pugi::xml_node& node, Command& cmd) {
  CreateItem item;
  item.kind = CreateItem::Kind::Account;
  item.account = required(node, "id", item.invalid);
  item.echo = {{"id", item.account}};
  std::string balance = required(node, "balance", item.invalid);
  if (!is_valid_account_id(item.account)) refuse(item.invalid, Reason::InvalidAccountId);
  parse_number(balance, "balance", item.amount, item.invalid);
  if (item.amount.is_negative()) refuse(item.invalid, Reason::NegativeBalance);
  cmd.creates.push_back(std::move(item));
}

void parse_create_symbol(const pugi::xml_node& node, Command& cmd) {
  std::optional<Reject> symbol_invalid;
  std::string symbol = required(node, "sym", symbol_invalid);
  if (!is_valid_symbol(symbol)) refuse(symbol_invalid, Reason::InvalidSymbol);
  bool any = false;
  for (const pugi::xml_node& child : node.children()) {
    if (child.type() != pugi::node_element) continue;
    any = true;
    CreateItem item;
    item.kind = CreateItem::Kind::Position;
    item.symbol = symbol;
    item.invalid = symbol_invalid;
    if (std::strcmp(child.name(), "account") != 0 && !item.invalid)
      item.invalid = named(Reason::UnknownElement, child.name(), "symbol");
    item.account = required(child, "id", item.invalid);
    item.echo = {{"sym", symbol}, {"id", item.account}};
    if (!is_valid_account_id(item.account)) refuse(item.invalid, Reason::InvalidAccountId);
    std::string text = text_of(child, item.invalid);
    parse_number(trim(text), "amount", item.amount, item.invalid);
    if (!item.amount.is_positive()) refuse(item.invalid, Reason::NonPositiveShares);
    cmd.creates.push_back(std::move(item));
  }
  if (!any) {
    CreateItem item;
    item.kind = CreateItem::Kind::Position;
    item.echo = {{"sym", symbol}};
    item.invalid = Reject(Reason::SymbolWithoutAccounts);
    cmd.creates.push_back(std::move(item));
  }
}

void parse_create(const pugi::xml_node& root, Command& cmd) {
  cmd.kind = Command::Kind::Create;
  for (const pugi::xml_node& child : root.children()) {
    if (child.type() != pugi::node_element) continue;
    if (std::strcmp(child.name(), "account") == 0) {
      parse_create_account(child, cmd);
    } else if (std::strcmp(child.name(), "symbol") == 0) {
      parse_create_symbol(child, cmd);
    } else {
      CreateItem item;
      item.echo = attributes_of(child);
      item.invalid = named(Reason::UnknownElement, child.name(), "create");
      cmd.creates.push_back(std::move(item));
    }
  }
}

// An optional attribute: its value, or null when absent.
const char* optional_attribute(const pugi::xml_node& node, const char* name) {
  pugi::xml_attribute a = node.attribute(name);
  return a ? a.value() : nullptr;
}

void parse_tif(const char* text, TransactionItem& item) {
  using market::TimeInForce;
  if (!text || std::strcmp(text, "GTC") == 0)
    item.terms.tif = TimeInForce::GoodTillCanceled;
  else if (std::strcmp(text, "IOC") == 0)
    item.terms.tif = TimeInForce::ImmediateOrCancel;
  else if (std::strcmp(text, "FOK") == 0)
    item.terms.tif = TimeInForce::FillOrKill;
  else if (!item.invalid) {
    item.invalid = Reject(Reason::InvalidTif);
    item.invalid->value = text;
  }
}

// <order sym amount [limit] [tif] [stop]>: docs/PROTOCOL.md, sections 4.1 and 4.5-4.7. Without
// a limit it is a market order (terms.limit stays zero).
void parse_order(const pugi::xml_node& child, TransactionItem& item) {
  item.kind = TransactionItem::Kind::Order;
  market::OrderTerms& terms = item.terms;
  item.symbol = required(child, "sym", item.invalid);
  std::string amount = required(child, "amount", item.invalid);
  const char* limit = optional_attribute(child, "limit");
  const char* stop = optional_attribute(child, "stop");
  if (stop && !limit && !item.invalid) item.invalid = named(Reason::MissingAttribute, "limit");
  if (!is_valid_symbol(item.symbol)) refuse(item.invalid, Reason::InvalidSymbol);
  parse_number(amount, "amount", terms.amount, item.invalid);
  if (limit) parse_number(limit, "limit", terms.limit, item.invalid);
  parse_tif(optional_attribute(child, "tif"), item);
  if (stop) {
    terms.stop.emplace();
    parse_number(stop, "stop", *terms.stop, item.invalid);
  }
  if (terms.amount.is_zero()) refuse(item.invalid, Reason::ZeroAmount);
  if (limit && !terms.limit.is_positive()) refuse(item.invalid, Reason::NonPositiveLimit);
  if (stop && !terms.stop->is_positive()) refuse(item.invalid, Reason::NonPositiveStop);
  const bool gtc = terms.tif == market::TimeInForce::GoodTillCanceled;
  if (!limit && gtc) refuse(item.invalid, Reason::MarketWithoutTif);
  if (stop && !gtc) refuse(item.invalid, Reason::StopWithoutGtc);
}

// <replace id shares limit>: docs/PROTOCOL.md, section 4.8.
void parse_replace(const pugi::xml_node& child, TransactionItem& item) {
  item.kind = TransactionItem::Kind::Replace;
  parse_order_id(required(child, "id", item.invalid), item);
  std::string shares = required(child, "shares", item.invalid);
  std::string limit = required(child, "limit", item.invalid);
  parse_number(shares, "shares", item.terms.amount, item.invalid);
  parse_number(limit, "limit", item.terms.limit, item.invalid);
  if (!item.terms.amount.is_positive()) refuse(item.invalid, Reason::NonPositiveNewShares);
  if (!item.terms.limit.is_positive()) refuse(item.invalid, Reason::NonPositiveLimit);
}

TransactionItem parse_transaction_child(const pugi::xml_node& child) {
  TransactionItem item;
  item.echo = attributes_of(child);
  const char* name = child.name();
  if (std::strcmp(name, "order") == 0) {
    parse_order(child, item);
  } else if (std::strcmp(name, "query") == 0 || std::strcmp(name, "cancel") == 0) {
    item.kind = name[0] == 'q' ? TransactionItem::Kind::Query : TransactionItem::Kind::Cancel;
    parse_order_id(required(child, "id", item.invalid), item);
  } else if (std::strcmp(name, "replace") == 0) {
    parse_replace(child, item);
  } else {
    item.invalid = named(Reason::UnknownElement, name, "transactions");
  }
  return item;
}

void parse_transactions(const pugi::xml_node& root, Command& cmd) {
  cmd.kind = Command::Kind::Transactions;
  pugi::xml_attribute id = root.attribute("id");
  cmd.account = id.value();
  if (!id)
    cmd.account_invalid = named(Reason::MissingAttribute, "id", "transactions");
  else if (!is_valid_account_id(cmd.account))
    cmd.account_invalid = Reject(Reason::InvalidAccountId);
  for (const pugi::xml_node& child : root.children())
    if (child.type() == pugi::node_element)
      cmd.transactions.push_back(parse_transaction_child(child));
  if (cmd.transactions.empty()) {
    cmd.kind = Command::Kind::Invalid;
    cmd.error = Reject(Reason::NoTransactionChildren);
  }
}

Command invalid(Reject why) {
  Command cmd;
  cmd.error = std::move(why);
  return cmd;
}

// Element children of the root, plus those of each <symbol> in a <create>; stops counting
// once past `stop_after`.
std::size_t count_children(const pugi::xml_node& root, bool is_create, std::size_t stop_after) {
  std::size_t n = 0;
  for (pugi::xml_node child = root.first_child(); child && n <= stop_after;
       child = child.next_sibling()) {
    if (child.type() != pugi::node_element) continue;
    ++n;
    if (!is_create || std::strcmp(child.name(), "symbol") != 0) continue;
    for (pugi::xml_node grandchild = child.first_child(); grandchild && n <= stop_after;
         grandchild = grandchild.next_sibling())
      if (grandchild.type() == pugi::node_element) ++n;
  }
  return n;
}

}  // namespace

ParseLimits ParseLimits::unlimited() {
  constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  return {kNone, kNone, kNone, kNone};
}

bool is_valid_account_id(std::string_view id) { return all_of(id, is_digit); }
bool is_valid_symbol(std::string_view symbol) { return all_of(symbol, is_alnum); }

bool Command::is_read_only() const {
  if (kind != Kind::Transactions) return kind == Kind::Invalid;
  for (const TransactionItem& item : transactions)
    if (item.kind != TransactionItem::Kind::Query) return false;
  return true;
}

Command parse(std::string_view payload, const ParseLimits& limits) {
  if (!plain_ascii_text(payload)) {
    if (!is_valid_utf8(payload)) return invalid(Reject(Reason::NotUtf8));
    if (auto why = forbidden_xml_char(payload)) return invalid(std::move(*why));
  }
  pugi::xml_document doc;
  // parse_default leaves DOCTYPE unparsed and never expands external entities; parse_fragment
  // keeps text outside the root element, so that it can be refused below.
  pugi::xml_parse_result ok =
      doc.load_buffer(payload.data(), payload.size(), pugi::parse_default | pugi::parse_fragment,
                      pugi::encoding_utf8);
  if (!ok) {
    Reject why(Reason::XmlSyntax);
    why.value = ok.description();
    why.offset = static_cast<std::size_t>(ok.offset);
    return invalid(std::move(why));
  }
  pugi::xml_node root;
  for (const pugi::xml_node& node : doc.children()) {
    if (node.type() == pugi::node_pcdata || node.type() == pugi::node_cdata)
      return invalid(Reject(Reason::TextOutsideRoot));
    if (node.type() != pugi::node_element) continue;
    if (root) return invalid(Reject(Reason::SeveralRoots));
    root = node;
  }
  if (!root) return invalid(Reject(Reason::NoRoot));
  if (auto why = check_elements(root, limits)) return invalid(std::move(*why));

  const bool is_create = std::strcmp(root.name(), "create") == 0;
  const bool is_transactions = std::strcmp(root.name(), "transactions") == 0;
  // Bounds the work and the reply of one request; the size limit alone allows ~100,000 tiny
  // children.
  if ((is_create || is_transactions) &&
      count_children(root, is_create, limits.max_children) > limits.max_children) {
    Reject why = named(Reason::TooManyChildren, root.name());
    why.limit = limits.max_children;
    return invalid(std::move(why));
  }

  Command cmd;
  if (is_create)
    parse_create(root, cmd);
  else if (is_transactions)
    parse_transactions(root, cmd);
  else
    cmd = invalid(named(Reason::UnknownRoot, root.name()));
  return cmd;
}

}  // namespace protocol
