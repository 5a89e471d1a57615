// The differential test of issue 48: random sequences of <create> and <transactions> requests,
// every order type mixed (GTC, IOC and FOK limits, market IOC and FOK, stop-limits, replaces,
// queries, cancels and some invalid children), each run through the real path (protocol::parse,
// app::apply on a market::Engine, protocol::render) and through reference::ReferenceMarket, a
// model written from docs/PROTOCOL.md alone (tests/support/reference_market.hpp). The replies
// must agree element by element, ids and times included, and so must every account's cash and
// positions after each request. Then the worked examples of PROTOCOL.md 4.5-4.8, with their
// replies written out, through both.
//
// A mismatch prints the seed, the request's index, the request and both replies; rerun one seed
// with `DIFFERENTIAL_SEED=7 build/bin/differential_test "random*"`, or more seeds with
// DIFFERENTIAL_SEEDS=200.
#include <cstdint>
#include <cstdlib>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <pugixml.hpp>

#include "app/apply.hpp"
#include "market/engine.hpp"
#include "protocol/parse.hpp"
#include "protocol/render.hpp"
#include "support/reference_market.hpp"

using market::Decimal;
using reference::Attributes;
using reference::Element;
using reference::TextCheck;

namespace {

const std::string kDeclaration = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
const std::string kFokText =
    "Fill or kill: the book cannot fill the whole amount at once within the limit; nothing was "
    "applied";

std::string request_xml(const Element& request) {
  return kDeclaration + reference::to_xml(request);
}

// The real path of one request, as the server applies it (without the journal).
class RealExchange {
 public:
  explicit RealExchange(const reference::ReferenceMarket::Limits& limits) {
    limits_.max_executions_per_request = limits.max_executions_per_request;
    limits_.max_open_orders = limits.max_open_orders;
    limits_.max_open_orders_per_account = limits.max_open_orders_per_account;
  }

  std::string send(const std::string& xml, std::int64_t now) {
    try {
      protocol::Command cmd = protocol::parse(xml, protocol::ParseLimits{});
      app::Admission admission = app::Admission::live(limits_, xml.size());
      market::Effects fx;
      app::Applied applied = app::apply(cmd, engine_, now, fx, admission);
      return protocol::render(applied.result);
    } catch (const std::exception& e) {
      return std::string("EXCEPTION: ") + e.what();
    }
  }

  const market::Engine& engine() const { return engine_; }

 private:
  app::Limits limits_;
  market::Engine engine_;
};

// An XML element as an Element tree: element children only, the text its own.
Element from_pugi(const pugi::xml_node& node) {
  Element e;
  e.name = node.name();
  for (const pugi::xml_attribute& a : node.attributes()) e.attrs.emplace_back(a.name(), a.value());
  for (const pugi::xml_node& c : node.children()) {
    if (c.type() == pugi::node_element) e.children.push_back(from_pugi(c));
    if (c.type() == pugi::node_pcdata) e.text += c.value();
  }
  return e;
}

// The items of a <results> document; false when it is not one.
bool parse_results(const std::string& xml, std::vector<Element>& items) {
  pugi::xml_document doc;
  if (!doc.load_buffer(xml.data(), xml.size())) return false;
  pugi::xml_node results = doc.child("results");
  if (!results) return false;
  for (const pugi::xml_node& c : results.children())
    if (c.type() == pugi::node_element) items.push_back(from_pugi(c));
  return true;
}

std::string attrs_text(const Attributes& attrs) {
  std::string out;
  for (const auto& [k, v] : attrs) out += " " + k + "=\"" + v + "\"";
  return out;
}

// The first difference between what the model (or a written-out expectation) says and what
// came, or "" when they agree. An <error>'s text is compared as far as `expected.check` says.
std::string difference(const Element& expected, const Element& actual, const std::string& where) {
  if (expected.name != actual.name)
    return where + ": <" + expected.name + "> expected, <" + actual.name + "> came";
  if (expected.attrs != actual.attrs)
    return where + " <" + expected.name + ">: attributes" + attrs_text(expected.attrs) +
           " expected," + attrs_text(actual.attrs) + " came";
  if (expected.name == "error") {
    bool ok = true;
    switch (expected.check) {
      case TextCheck::Exact:
        ok = actual.text == expected.text;
        break;
      case TextCheck::Prefix:
        ok = actual.text.rfind(expected.text, 0) == 0;
        break;
      case TextCheck::Contains:
        ok = actual.text.find(expected.text) != std::string::npos;
        break;
      case TextCheck::Any:
        break;
    }
    if (!ok)
      return where + " <error>: text '" + expected.text + "' expected, '" + actual.text + "' came";
    return "";
  }
  if (expected.children.size() != actual.children.size())
    return where + " <" + expected.name + ">: " + std::to_string(expected.children.size()) +
           " children expected, " + std::to_string(actual.children.size()) + " came";
  for (std::size_t i = 0; i < expected.children.size(); ++i) {
    std::string d = difference(expected.children[i], actual.children[i],
                               where + " <" + expected.name + "> child " + std::to_string(i + 1));
    if (!d.empty()) return d;
  }
  return "";
}

std::string difference(const std::vector<Element>& expected, const std::string& reply) {
  std::vector<Element> actual;
  if (!parse_results(reply, actual)) return "the reply is not a <results> document";
  if (expected.size() != actual.size())
    return std::to_string(expected.size()) + " items expected, " + std::to_string(actual.size()) +
           " came";
  for (std::size_t i = 0; i < expected.size(); ++i) {
    std::string d = difference(expected[i], actual[i], "item " + std::to_string(i + 1));
    if (!d.empty()) return d;
  }
  return "";
}

std::string show(const std::vector<Element>& items) {
  std::string out = "<results>";
  for (const Element& e : items) {
    out += "\n  " + reference::to_xml(e);
    if (e.name == "error" && e.check != TextCheck::Exact)
      out += e.check == TextCheck::Any ? "  (any text)" : "  (text checked in part)";
  }
  return out + "\n</results>";
}

// Every account of the model against the engine's: cash and each symbol's position.
std::string account_difference(const reference::ReferenceMarket& model,
                               const market::Engine& engine,
                               const std::vector<std::string>& symbols) {
  std::string out;
  for (const auto& [id, acct] : model.accounts()) {
    const market::Account* real = engine.account(id);
    if (!real) {
      out += "account " + id + " missing in the engine\n";
      continue;
    }
    if (real->cash != acct.cash)
      out += "account " + id + " cash: model " + acct.cash.to_string() + ", engine " +
             real->cash.to_string() + "\n";
    for (const std::string& sym : symbols) {
      auto it = real->positions.find(sym);
      const Decimal held = it == real->positions.end() ? Decimal() : it->second.amount;
      if (held != acct.position(sym))
        out += "account " + id + " position " + sym + ": model " + acct.position(sym).to_string() +
               ", engine " + held.to_string() + "\n";
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Random requests.

const std::vector<std::string> kAccounts{"1001", "1002", "1003", "1004"};
const std::vector<std::string> kSymbols{"X", "Y"};

class Generator {
 public:
  Generator(std::uint64_t seed, const reference::ReferenceMarket& model)
      : rng_(seed), model_(model) {}

  Element first() {
    Element create{"create", {}, {}, {}, TextCheck::Exact};
    const std::vector<std::string> balances{"1200", "600", "300", "2500"};
    for (std::size_t i = 0; i < kAccounts.size(); ++i)
      create.children.push_back(account_element(kAccounts[i], balances[i]));
    for (const std::string& sym : kSymbols) {
      Element symbol{"symbol", {{"sym", sym}}, {}, {}, TextCheck::Exact};
      for (const std::string& id : kAccounts)
        symbol.children.push_back(
            Element{"account", {{"id", id}}, {}, std::to_string(pick(30, 80)), TextCheck::Exact});
      create.children.push_back(symbol);
    }
    return create;
  }

  Element next() {
    if (pick(0, 99) < 5) return create();
    account_ = pick(0, 99) < 3 ? "1999" : kAccounts[pick(0, kAccounts.size() - 1)];
    Element tx{"transactions", {{"id", account_}}, {}, {}, TextCheck::Exact};
    const int roll = pick(0, 99);
    const int children = roll < 55 ? 1 : roll < 80 ? 2 : roll < 95 ? 3 : 4;
    for (int i = 0; i < children; ++i) tx.children.push_back(child());
    return tx;
  }

 private:
  std::size_t pick(std::size_t lo, std::size_t hi) {
    return std::uniform_int_distribution<std::size_t>(lo, hi)(rng_);
  }
  bool chance(int percent) { return static_cast<int>(pick(0, 99)) < percent; }
  template <typename T>
  const T& one_of(const std::vector<T>& v) {
    return v[pick(0, v.size() - 1)];
  }

  static Element account_element(const std::string& id, const std::string& balance) {
    return Element{"account", {{"id", id}, {"balance", balance}}, {}, {}, TextCheck::Exact};
  }

  // Occasional <create>: more shares, or an account that exists (section 3).
  Element create() {
    Element create{"create", {}, {}, {}, TextCheck::Exact};
    if (chance(50)) {
      create.children.push_back(account_element(one_of(kAccounts), "100"));
    } else {
      Element symbol{"symbol", {{"sym", one_of(kSymbols)}}, {}, {}, TextCheck::Exact};
      symbol.children.push_back(Element{"account",
                                        {{"id", one_of(kAccounts)}},
                                        {},
                                        std::to_string(pick(5, 30)),
                                        TextCheck::Exact});
      create.children.push_back(symbol);
    }
    return create;
  }

  // Prices near 10 so that orders cross often, sometimes written with extra zeros (the echo must
  // keep them, status numbers must not).
  Decimal price() { return Decimal::from_raw(Decimal::scale() * (18 + pick(0, 4)) / 2); }
  std::string text(Decimal d) {
    std::string s = d.to_string();
    if (chance(8)) return s.find('.') == std::string::npos ? s + ".0" : s + "0";
    if (chance(4)) return "0" + s;
    return s;
  }
  Decimal shares() {
    if (chance(6)) return Decimal::from_int(static_cast<std::int64_t>(pick(30, 70)));  // sweeps
    Decimal d = Decimal::from_int(static_cast<std::int64_t>(pick(1, 20)));
    if (chance(10)) d += Decimal::from_raw(Decimal::scale() / 2);
    return d;
  }
  std::string amount_text(Decimal shares, bool buy) { return (buy ? "" : "-") + text(shares); }

  // An <order> with the given attributes, usually in the usual order, sometimes shuffled (the
  // reply echoes them in the order written, 4.1).
  Element order(Attributes attrs) {
    if (chance(10)) std::shuffle(attrs.begin(), attrs.end(), rng_);
    return Element{"order", std::move(attrs), {}, {}, TextCheck::Exact};
  }

  Element limit_order(const char* tif) {
    const bool buy = chance(50);
    Attributes a{{"sym", one_of(kSymbols)},
                 {"amount", amount_text(shares(), buy)},
                 {"limit", text(price())}};
    if (tif) a.emplace_back("tif", tif);
    return order(a);
  }

  Element market_order(const char* tif) {
    const bool buy = chance(50);
    return order({{"sym", one_of(kSymbols)}, {"amount", amount_text(shares(), buy)}, {"tif", tif}});
  }

  Element stop_order() {
    const bool buy = chance(50);
    const Decimal stop = price();
    const Decimal offset =
        Decimal::from_raw(Decimal::scale() * static_cast<long long>(pick(0, 2)) / 2);
    const Decimal limit = buy ? stop + offset : stop - offset;
    Attributes a{{"sym", one_of(kSymbols)},
                 {"amount", amount_text(shares(), buy)},
                 {"limit", text(limit)},
                 {"stop", text(stop)}};
    if (chance(15)) a.emplace_back("tif", "GTC");
    return order(a);
  }

  // One invalid child, one defect at a time (4.5-4.7).
  Element invalid_order() {
    const std::string sym = one_of(kSymbols);
    switch (pick(0, 6)) {
      case 0:
        return order({{"sym", sym},
                      {"amount", "5"},
                      {"limit", "10"},
                      {"tif", one_of<std::string>({"DAY", "ioc", "gtc", ""})}});
      case 1:
        return order({{"sym", sym}, {"amount", "5"}});  // market without tif
      case 2:
        return order({{"sym", sym}, {"amount", "-5"}, {"tif", "GTC"}});
      case 3:
        return order({{"sym", sym},
                      {"amount", "5"},
                      {"limit", "11"},
                      {"stop", "10"},
                      {"tif", one_of<std::string>({"IOC", "FOK"})}});
      case 4:
        return order({{"sym", sym}, {"amount", "5"}, {"stop", "10"}});  // stop without limit
      case 5:
        return order({{"sym", sym},
                      {"amount", "5"},
                      {"limit", "11"},
                      {"stop", one_of<std::string>({"0", "-1", "x"})}});
      default:
        return order(
            {{"sym", "Z"}, {"amount", "5"}, {"limit", "10"}, {"tif", "IOC"}});  // unknown symbol
    }
  }

  std::vector<const reference::Order*> orders_where(bool own, bool on_book_only,
                                                    bool waiting_only) {
    std::vector<const reference::Order*> out;
    for (const reference::Order& o : model_.orders()) {
      if ((o.account == account_) != own) continue;
      if (on_book_only && !o.on_book) continue;
      if (waiting_only && !o.waiting) continue;
      out.push_back(&o);
    }
    return out;
  }

  std::string unknown_id() { return std::to_string(model_.orders().size() + 50 + pick(0, 9)); }

  // An order id to query, cancel or replace: mostly the account's own.
  std::string some_id(int own_percent, bool on_book_only) {
    const bool own = chance(own_percent);
    auto candidates = orders_where(own, on_book_only && own, false);
    if (candidates.empty()) candidates = orders_where(own, false, false);
    if (candidates.empty() || chance(5)) return unknown_id();
    return std::to_string(one_of(candidates)->id);
  }

  Element replace() {
    Element r{"replace", {}, {}, {}, TextCheck::Exact};
    const int roll = pick(0, 99);
    std::string id;
    std::string shares_text;
    std::string limit_text;
    auto resting = orders_where(true, true, false);
    auto waiting = orders_where(true, false, true);
    const reference::Order* target = nullptr;
    if (roll < 65 && !resting.empty()) {
      target = one_of(resting);
    } else if (roll < 72 && !waiting.empty()) {
      target = one_of(waiting);
    } else if (roll < 90) {
      id = some_id(60, false);
    } else {
      id = unknown_id();
    }
    if (target) {
      id = std::to_string(target->id);
      const int how = pick(0, 99);
      const Decimal open = target->open;
      if (how < 30 && open > Decimal::from_int(1)) {
        shares_text =
            std::to_string(pick(1, static_cast<std::size_t>((open.raw() - 1) / Decimal::scale())));
      } else if (how < 45) {
        shares_text = open.is_zero() ? "1" : open.to_string();
      } else {
        shares_text = shares().to_string();
      }
      limit_text = chance(50) && target->limit ? target->limit->to_string() : text(price());
      if (chance(15)) {  // aggressive: crosses the book, may sweep it
        limit_text = target->buy ? "12" : "8";
        shares_text = std::to_string(pick(20, 60));
      }
    } else {
      shares_text = shares().to_string();
      limit_text = text(price());
    }
    if (chance(4)) shares_text = one_of<std::string>({"0", "-3"});
    if (chance(3)) limit_text = one_of<std::string>({"0", "-1"});
    r.attrs = {{"id", id}, {"shares", shares_text}, {"limit", limit_text}};
    return r;
  }

  Element child() {
    const int roll = pick(0, 99);
    if (roll < 24) return limit_order(chance(15) ? "GTC" : nullptr);
    if (roll < 34) return limit_order("IOC");
    if (roll < 42) return limit_order("FOK");
    if (roll < 49) return market_order("IOC");
    if (roll < 54) return market_order("FOK");
    if (roll < 66) return stop_order();
    if (roll < 80) return replace();
    if (roll < 88) return Element{"query", {{"id", some_id(80, false)}}, {}, {}, TextCheck::Exact};
    if (roll < 95) return Element{"cancel", {{"id", some_id(80, true)}}, {}, {}, TextCheck::Exact};
    return invalid_order();
  }

  std::mt19937_64 rng_;
  const reference::ReferenceMarket& model_;
  std::string account_;
};

// Runs one seeded sequence through both; returns the report of the first mismatch, or "".
std::string run_sequence(std::uint64_t seed, int requests,
                         const reference::ReferenceMarket::Limits& limits,
                         std::map<std::string, int>& hits) {
  RealExchange real(limits);
  reference::ReferenceMarket model(limits);
  Generator gen(seed, model);
  const std::int64_t start = 1700000000;
  for (int i = 0; i < requests; ++i) {
    const Element request = i == 0 ? gen.first() : gen.next();
    const std::int64_t now = start + i;
    const std::string xml = request_xml(request);
    const std::string reply = real.send(xml, now);
    const std::vector<Element> expected = model.apply(request, now);
    std::string d = difference(expected, reply);
    std::string accounts = account_difference(model, real.engine(), kSymbols);
    if (d.empty() && accounts.empty()) {
      if (i + 1 == requests)
        for (const auto& [rule, n] : model.hits()) hits[rule] += n;
      continue;
    }
    std::ostringstream out;
    out << "seed " << seed << ", request " << i << " (time " << now << ")\n"
        << (d.empty() ? "" : "reply: " + d + "\n") << accounts << "--- request\n"
        << xml << "\n--- engine's reply\n"
        << reply << "\n--- model's reply\n"
        << show(expected) << "\n";
    return out.str();
  }
  return "";
}

// ---------------------------------------------------------------------------------------------
// Written-out cases: each request's reply as PROTOCOL.md's worked examples say it.

Element request_from_xml(const std::string& xml) {
  pugi::xml_document doc;
  REQUIRE(doc.load_string(xml.c_str()));
  return from_pugi(doc.document_element());
}

// Both paths side by side; each step's expected reply is written out. An expected <error> whose
// text starts with '~' only has to contain the rest.
class Scenario {
 public:
  explicit Scenario(std::size_t max_executions = 10000)
      : real_(limits(max_executions)), model_(limits(max_executions)) {}

  void step(const std::string& request, const std::string& expected_results) {
    now_ += 1;
    const std::string xml = kDeclaration + request;
    const std::string reply = real_.send(xml, now_);
    const std::vector<Element> modeled = model_.apply(request_from_xml(request), now_);
    std::vector<Element> expected;
    REQUIRE(parse_results(expected_results, expected));
    for (Element& e : expected) {
      if (e.name == "error" && !e.text.empty() && e.text[0] == '~') {
        e.text.erase(0, 1);
        e.check = TextCheck::Contains;
      }
    }
    INFO("request: " << request << "\nexpected: " << expected_results << "\nengine: " << reply
                     << "\nmodel: " << show(modeled));
    CHECK(difference(expected, reply) == "");
    CHECK(model_difference(expected, modeled) == "");
  }

  void cash(const std::string& account, const std::string& amount) {
    Decimal want;
    REQUIRE_FALSE(Decimal::parse(amount, want).has_value());
    const market::Account* real = real_.engine().account(account);
    REQUIRE(real);
    INFO("cash of " << account);
    CHECK(real->cash.to_string() == want.to_string());
    CHECK(model_.accounts().at(account).cash.to_string() == want.to_string());
  }

  std::int64_t now() const { return now_; }
  std::string t(int offset = 0) const { return std::to_string(now_ + 1 + offset); }

 private:
  // The model against the written-out reply; where the model leaves an error's text open, only
  // the element and its attributes count.
  static std::string model_difference(std::vector<Element> expected,
                                      const std::vector<Element>& modeled) {
    if (expected.size() != modeled.size())
      return std::to_string(expected.size()) + " items expected, the model has " +
             std::to_string(modeled.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      Element want = expected[i];
      Element got = modeled[i];
      if (got.name == "error" && got.check != TextCheck::Exact) want.check = TextCheck::Any;
      std::string d = difference(want, got, "item " + std::to_string(i + 1));
      if (!d.empty()) return d;
    }
    return "";
  }

  static reference::ReferenceMarket::Limits limits(std::size_t max_executions) {
    reference::ReferenceMarket::Limits l;
    l.max_executions_per_request = max_executions;
    return l;
  }

  RealExchange real_;
  reference::ReferenceMarket model_;
  std::int64_t now_ = 1600000000;
};

}  // namespace

TEST_CASE("random sequences agree with the reference model", "[differential]") {
  // DIFFERENTIAL_SEED=N runs that seed alone; DIFFERENTIAL_SEEDS=N runs seeds 1..N (default 12).
  std::uint64_t first = 1;
  std::uint64_t last = 12;
  if (const char* one = std::getenv("DIFFERENTIAL_SEED")) first = last = std::stoull(one);
  if (const char* many = std::getenv("DIFFERENTIAL_SEEDS")) last = std::stoull(many);
  std::map<std::string, int> hits;
  for (std::uint64_t seed = first; seed <= last; ++seed) {
    // Small limits (section 7), so that they are reached: an execution budget of 5, or 2 for
    // every third seed; for every fourth, 6 resting orders an account and 16 in all.
    reference::ReferenceMarket::Limits limits;
    limits.max_executions_per_request = seed % 3 == 0 ? 2 : 5;
    if (seed % 4 == 0) {
      limits.max_open_orders_per_account = 6;
      limits.max_open_orders = 16;
    }
    const std::string mismatch = run_sequence(seed, 200, limits, hits);
    INFO(mismatch);
    CHECK(mismatch.empty());
  }
  if (first != 1 || last < 12) return;
  // The sequences must reach every rule the model has, or they prove little.
  std::string seen;
  for (const auto& [rule, n] : hits) seen += "  " + rule + ": " + std::to_string(n) + "\n";
  INFO("rules the model exercised:\n" << seen);
  const std::vector<std::string> rules{std::string("execution"),
                                       "self trade",
                                       "market order executed",
                                       "market buy stopped for cash",
                                       "rest of an IOC, FOK or market order canceled",
                                       "stop triggered",
                                       "stop triggered by a stop",
                                       "stops triggered by one execution",
                                       "waiting stop canceled",
                                       "replace keeps priority",
                                       "replace changes nothing",
                                       "replace loses priority",
                                       "replace matches at once",
                                       "order over the budget",
                                       "order over an open-order limit",
                                       "replace over the budget",
                                       "over the budget with triggered stops",
                                       "order refused: " + kFokText.substr(0, 40),
                                       "order refused: Insufficient funds: order needs ",
                                       "order refused: Insufficient shares",
                                       "order refused: Invalid tif: must be GTC, IOC or FOK",
                                       "order refused: Invalid order: a market order (no limit) ne",
                                       "order refused: Invalid order: a stop order's tif must be G",
                                       "order refused: Missing attribute 'limit'",
                                       "order refused: Invalid stop: ",
                                       "replace refused: No such order for this account",
                                       "replace refused: Order has nothing open to replace",
                                       "replace refused: Order is a stop that has not triggered: c",
                                       "replace refused: Insufficient funds: order needs ",
                                       "replace refused: Insufficient shares",
                                       "replace refused: Invalid shares: ",
                                       "replace refused: Invalid limit: "};
  for (std::string rule : rules) {
    // A refusal is keyed by its text's first 40 characters: a rule matches by its start.
    if (rule.size() > rule.find(": ") + 2 + 40) rule.resize(rule.find(": ") + 2 + 40);
    bool reached = false;
    for (const auto& [key, n] : hits) reached = reached || key.rfind(rule, 0) == 0;
    INFO(rule);
    CHECK(reached);
  }
}

namespace {

const std::string kFok =
    "Fill or kill: the book cannot fill the whole amount at once within the limit; nothing was "
    "applied";

std::string tx(const std::string& account, const std::string& children) {
  return "<transactions id=\"" + account + "\">" + children + "</transactions>";
}

std::string results(const std::string& items) { return "<results>" + items + "</results>"; }

}  // namespace

TEST_CASE("PROTOCOL.md 4.5: IOC and FOK", "[differential][examples]") {
  Scenario s;
  s.step(
      "<create><account id=\"1\" balance=\"0\"/><account id=\"2\" balance=\"10000\"/>"
      "<symbol sym=\"X\"><account id=\"1\">200</account></symbol></create>",
      results("<created id=\"1\"/><created id=\"2\"/><created sym=\"X\" id=\"1\"/>"));
  s.step(tx("1",
            "<order sym=\"X\" amount=\"-100\" limit=\"10\"/>"
            "<order sym=\"X\" amount=\"-100\" limit=\"11\"/>"),
         results("<opened sym=\"X\" amount=\"-100\" limit=\"10\" id=\"1\"/>"
                 "<opened sym=\"X\" amount=\"-100\" limit=\"11\" id=\"2\"/>"));
  // Reserves 1,575, executes 100 @10, cancels 50 and gives back 50 + 525: 9,000 left.
  s.step(tx("2", "<order sym=\"X\" amount=\"150\" limit=\"10.5\" tif=\"IOC\"/><query id=\"3\"/>"),
         results("<opened sym=\"X\" amount=\"150\" limit=\"10.5\" tif=\"IOC\" id=\"3\"/>"
                 "<status id=\"3\"><canceled shares=\"50\" time=\"" +
                 s.t() + "\"/><executed shares=\"100\" price=\"10\" time=\"" + s.t() +
                 "\"/></status>"));
  s.cash("2", "9000");
  // The rest is canceled: nothing can match it any more, and it cannot be canceled again.
  s.step(tx("2", "<cancel id=\"3\"/>"), results("<error id=\"3\">~</error>"));
  s.step(tx("2", "<order sym=\"X\" amount=\"150\" limit=\"11\" tif=\"FOK\"/>"),
         results("<error sym=\"X\" amount=\"150\" limit=\"11\" tif=\"FOK\">" + kFok + "</error>"));
  s.cash("2", "9000");
  s.step(tx("2", "<order sym=\"X\" amount=\"100\" limit=\"11\" tif=\"FOK\"/><query id=\"4\"/>"),
         results("<opened sym=\"X\" amount=\"100\" limit=\"11\" tif=\"FOK\" id=\"4\"/>"
                 "<status id=\"4\"><executed shares=\"100\" price=\"11\" time=\"" +
                 s.t() + "\"/></status>"));
  s.cash("2", "7900");
  s.cash("1", "2100");
  // An IOC that executes nothing is accepted and canceled whole; tif is case-sensitive.
  s.step(tx("2",
            "<order tif=\"IOC\" sym=\"X\" amount=\"5\" limit=\"20\"/><query id=\"5\"/>"
            "<order sym=\"X\" amount=\"5\" limit=\"20\" tif=\"ioc\"/>"),
         results("<opened tif=\"IOC\" sym=\"X\" amount=\"5\" limit=\"20\" id=\"5\"/>"
                 "<status id=\"5\"><canceled shares=\"5\" time=\"" +
                 s.t() +
                 "\"/></status>"
                 "<error sym=\"X\" amount=\"5\" limit=\"20\" tif=\"ioc\">"
                 "Invalid tif: must be GTC, IOC or FOK</error>"));
  s.cash("2", "7900");
}

TEST_CASE("PROTOCOL.md 4.6: market orders", "[differential][examples]") {
  const std::string setup =
      "<create><account id=\"1\" balance=\"0\"/><account id=\"2\" balance=\"1500\"/>"
      "<symbol sym=\"X\"><account id=\"1\">200</account></symbol></create>";
  const std::string sells = tx("1",
                               "<order sym=\"X\" amount=\"-100\" limit=\"10\"/><order sym=\"X\" "
                               "amount=\"-100\" limit=\"12\"/>");
  const std::string opened = results(
      "<opened sym=\"X\" amount=\"-100\" limit=\"10\" id=\"1\"/>"
      "<opened sym=\"X\" amount=\"-100\" limit=\"12\" id=\"2\"/>");
  SECTION("IOC buy stops at the first execution it cannot pay") {
    Scenario s;
    s.step(setup, results("<created id=\"1\"/><created id=\"2\"/><created sym=\"X\" id=\"1\"/>"));
    s.step(sells, opened);
    s.step(tx("2", "<order sym=\"X\" amount=\"200\" tif=\"IOC\"/><query id=\"3\"/>"),
           results("<opened sym=\"X\" amount=\"200\" tif=\"IOC\" id=\"3\"/>"
                   "<status id=\"3\"><canceled shares=\"100\" time=\"" +
                   s.t() + "\"/><executed shares=\"100\" price=\"10\" time=\"" + s.t() +
                   "\"/></status>"));
    s.cash("2", "500");
    // Order 2 is untouched and still rests; a market sell of the bought shares finds no bid.
    s.step(tx("1", "<query id=\"2\"/>"),
           results("<status id=\"2\"><open shares=\"100\"/></status>"));
    s.step(tx("2",
              "<order sym=\"X\" amount=\"-40\" tif=\"IOC\"/><query id=\"4\"/>"
              "<order sym=\"X\" amount=\"-40\" tif=\"FOK\"/>"),
           results("<opened sym=\"X\" amount=\"-40\" tif=\"IOC\" id=\"4\"/>"
                   "<status id=\"4\"><canceled shares=\"40\" time=\"" +
                   s.t() +
                   "\"/></status>"
                   "<error sym=\"X\" amount=\"-40\" tif=\"FOK\">" +
                   kFok + "</error>"));
  }
  SECTION("FOK buy whose whole cost the balance cannot pay") {
    Scenario s;
    s.step(setup, results("<created id=\"1\"/><created id=\"2\"/><created sym=\"X\" id=\"1\"/>"));
    s.step(sells, opened);
    s.step(tx("2", "<order sym=\"X\" amount=\"200\" tif=\"FOK\"/>"),
           results("<error sym=\"X\" amount=\"200\" tif=\"FOK\">"
                   "Insufficient funds: order needs 2200, balance is 1500</error>"));
    // 150 would cost 1,600; 140 costs 1,480 and fills.
    s.step(tx("2", "<order sym=\"X\" amount=\"150\" tif=\"FOK\"/>"),
           results("<error sym=\"X\" amount=\"150\" tif=\"FOK\">"
                   "Insufficient funds: order needs 1600, balance is 1500</error>"));
    s.step(tx("2", "<order sym=\"X\" amount=\"140\" tif=\"FOK\"/><query id=\"3\"/>"),
           results("<opened sym=\"X\" amount=\"140\" tif=\"FOK\" id=\"3\"/>"
                   "<status id=\"3\"><executed shares=\"100\" price=\"10\" time=\"" +
                   s.t() + "\"/><executed shares=\"40\" price=\"12\" time=\"" + s.t() +
                   "\"/></status>"));
    s.cash("2", "20");
  }
  SECTION("a market order needs IOC or FOK") {
    Scenario s;
    s.step(setup, results("<created id=\"1\"/><created id=\"2\"/><created sym=\"X\" id=\"1\"/>"));
    const std::string text = "Invalid order: a market order (no limit) needs tif IOC or FOK";
    s.step(tx("2", "<order sym=\"X\" amount=\"5\"/><order sym=\"X\" amount=\"5\" tif=\"GTC\"/>"),
           results("<error sym=\"X\" amount=\"5\">" + text +
                   "</error>"
                   "<error sym=\"X\" amount=\"5\" tif=\"GTC\">" +
                   text + "</error>"));
  }
}

TEST_CASE("PROTOCOL.md 4.7: stop-limit orders", "[differential][examples]") {
  // S (1) sells; A (2) places the stop; B (3) buys; C (4) trades with itself.
  Scenario s;
  s.step(
      "<create><account id=\"1\" balance=\"0\"/><account id=\"2\" balance=\"2000\"/>"
      "<account id=\"3\" balance=\"2000\"/><account id=\"4\" balance=\"1000\"/>"
      "<symbol sym=\"X\"><account id=\"1\">200</account><account id=\"4\">50</account></symbol>"
      "</create>",
      results("<created id=\"1\"/><created id=\"2\"/><created id=\"3\"/><created id=\"4\"/>"
              "<created sym=\"X\" id=\"1\"/><created sym=\"X\" id=\"4\"/>"));
  s.step(tx("1",
            "<order sym=\"X\" amount=\"-100\" limit=\"10\"/><order sym=\"X\" amount=\"-100\" "
            "limit=\"12\"/>"),
         results("<opened sym=\"X\" amount=\"-100\" limit=\"10\" id=\"1\"/>"
                 "<opened sym=\"X\" amount=\"-100\" limit=\"12\" id=\"2\"/>"));
  s.step(tx("2", "<order sym=\"X\" amount=\"100\" limit=\"13\" stop=\"11\"/><query id=\"3\"/>"),
         results("<opened sym=\"X\" amount=\"100\" limit=\"13\" stop=\"11\" id=\"3\"/>"
                 "<status id=\"3\"><waiting shares=\"100\" stop=\"11\"/></status>"));
  s.cash("2", "700");
  s.step(tx("3", "<order sym=\"X\" amount=\"100\" limit=\"10\"/>"),
         results("<opened sym=\"X\" amount=\"100\" limit=\"10\" id=\"4\"/>"));
  s.step(tx("2", "<query id=\"3\"/>"),
         results("<status id=\"3\"><waiting shares=\"100\" stop=\"11\"/></status>"));
  s.step(tx("4",
            "<order sym=\"X\" amount=\"-50\" limit=\"11\"/><order sym=\"X\" amount=\"50\" "
            "limit=\"11\"/>"),
         results("<opened sym=\"X\" amount=\"-50\" limit=\"11\" id=\"5\"/>"
                 "<opened sym=\"X\" amount=\"50\" limit=\"11\" id=\"6\"/>"));
  const std::string when = std::to_string(s.now());
  s.step(tx("2", "<query id=\"3\"/>"),
         results("<status id=\"3\"><executed shares=\"100\" price=\"12\" time=\"" + when +
                 "\"/></status>"));
  s.cash("2", "800");  // reserved 1,300, paid 1,200, 100 back
  s.cash("4", "1000");
}

TEST_CASE("4.7: stops triggered by one execution enter by id, later ones behind",
          "[differential][examples]") {
  Scenario s;
  s.step(
      "<create><account id=\"1\" balance=\"0\"/><account id=\"2\" balance=\"5000\"/>"
      "<account id=\"3\" balance=\"5000\"/><symbol sym=\"X\"><account "
      "id=\"1\">30</account></symbol>"
      "</create>",
      results("<created id=\"1\"/><created id=\"2\"/><created id=\"3\"/><created sym=\"X\" "
              "id=\"1\"/>"));
  s.step(tx("1",
            "<order sym=\"X\" amount=\"-10\" limit=\"10\"/><order sym=\"X\" amount=\"-10\" "
            "limit=\"11\"/>"
            "<order sym=\"X\" amount=\"-10\" limit=\"12\"/>"),
         results("<opened sym=\"X\" amount=\"-10\" limit=\"10\" id=\"1\"/>"
                 "<opened sym=\"X\" amount=\"-10\" limit=\"11\" id=\"2\"/>"
                 "<opened sym=\"X\" amount=\"-10\" limit=\"12\" id=\"3\"/>"));
  s.step(tx("2",
            "<order sym=\"X\" amount=\"5\" limit=\"11\" stop=\"10\"/>"
            "<order sym=\"X\" amount=\"5\" limit=\"11\" stop=\"10\"/>"
            "<order sym=\"X\" amount=\"10\" limit=\"12\" stop=\"11\"/>"),
         results("<opened sym=\"X\" amount=\"5\" limit=\"11\" stop=\"10\" id=\"4\"/>"
                 "<opened sym=\"X\" amount=\"5\" limit=\"11\" stop=\"10\" id=\"5\"/>"
                 "<opened sym=\"X\" amount=\"10\" limit=\"12\" stop=\"11\" id=\"6\"/>"));
  // 10 @10 triggers 4 and 5; 4's execution at 11 triggers 6, which enters after 5.
  s.step(tx("3", "<order sym=\"X\" amount=\"10\" limit=\"10\"/>"),
         results("<opened sym=\"X\" amount=\"10\" limit=\"10\" id=\"7\"/>"));
  const std::string t = std::to_string(s.now());
  s.step(tx("2", "<query id=\"4\"/><query id=\"5\"/><query id=\"6\"/>"),
         results("<status id=\"4\"><executed shares=\"5\" price=\"11\" time=\"" + t +
                 "\"/></status>"
                 "<status id=\"5\"><executed shares=\"5\" price=\"11\" time=\"" +
                 t +
                 "\"/></status>"
                 "<status id=\"6\"><executed shares=\"10\" price=\"12\" time=\"" +
                 t + "\"/></status>"));
  s.cash("2", "4770");  // 5,000 - 55 - 55 - 120, each at its own limit
}

TEST_CASE("7: triggered stops count toward --max-executions-per-request",
          "[differential][examples]") {
  const std::string setup =
      "<create><account id=\"1\" balance=\"0\"/><account id=\"2\" balance=\"5000\"/>"
      "<account id=\"3\" balance=\"5000\"/><symbol sym=\"X\"><account "
      "id=\"1\">30</account></symbol>"
      "</create>";
  const std::string created = results(
      "<created id=\"1\"/><created id=\"2\"/><created id=\"3\"/><created sym=\"X\" id=\"1\"/>");
  const std::string sells = tx("1",
                               "<order sym=\"X\" amount=\"-10\" limit=\"10\"/>"
                               "<order sym=\"X\" amount=\"-10\" limit=\"11\"/>");
  const std::string sells_opened = results(
      "<opened sym=\"X\" amount=\"-10\" limit=\"10\" id=\"1\"/>"
      "<opened sym=\"X\" amount=\"-10\" limit=\"11\" id=\"2\"/>");
  const std::string stop = tx("2", "<order sym=\"X\" amount=\"10\" limit=\"12\" stop=\"10\"/>");
  const std::string stop_opened =
      results("<opened sym=\"X\" amount=\"10\" limit=\"12\" stop=\"10\" id=\"3\"/>");
  SECTION("within the budget: one execution, one trigger, the stop's execution") {
    Scenario s(3);
    s.step(setup, created);
    s.step(sells, sells_opened);
    s.step(stop, stop_opened);
    s.step(tx("3", "<order sym=\"X\" amount=\"10\" limit=\"10\"/>"),
           results("<opened sym=\"X\" amount=\"10\" limit=\"10\" id=\"4\"/>"));
    s.step(tx("2", "<query id=\"3\"/>"),
           results("<status id=\"3\"><executed shares=\"10\" price=\"11\" time=\"" +
                   std::to_string(s.now()) + "\"/></status>"));
  }
  SECTION("one short of it: nothing of the child is applied, no trigger") {
    Scenario s(2);
    s.step(setup, created);
    s.step(sells, sells_opened);
    s.step(stop, stop_opened);
    s.step(
        tx("3", "<order sym=\"X\" amount=\"10\" limit=\"10\"/><query id=\"1\"/>"),
        results("<error sym=\"X\" amount=\"10\" limit=\"10\">~--max-executions-per-request</error>"
                "<error id=\"1\">~</error>"));
    s.step(tx("2", "<query id=\"3\"/>"),
           results("<status id=\"3\"><waiting shares=\"10\" stop=\"10\"/></status>"));
    s.step(tx("1", "<query id=\"1\"/>"),
           results("<status id=\"1\"><open shares=\"10\"/></status>"));
    s.cash("3", "5000");
  }
}

TEST_CASE("PROTOCOL.md 4.8: replace", "[differential][examples]") {
  const std::string setup =
      "<create><account id=\"1\" balance=\"2000\"/><account id=\"2\" balance=\"2000\"/>"
      "<account id=\"3\" balance=\"0\"/><symbol sym=\"X\"><account id=\"3\">100</account></symbol>"
      "</create>";
  const std::string created = results(
      "<created id=\"1\"/><created id=\"2\"/><created id=\"3\"/><created sym=\"X\" id=\"3\"/>");
  auto rest_two = [&](Scenario& s) {
    s.step(setup, created);
    s.step(tx("1", "<order sym=\"X\" amount=\"100\" limit=\"10\"/>"),
           results("<opened sym=\"X\" amount=\"100\" limit=\"10\" id=\"1\"/>"));
    s.step(tx("2", "<order sym=\"X\" amount=\"100\" limit=\"10\"/>"),
           results("<opened sym=\"X\" amount=\"100\" limit=\"10\" id=\"2\"/>"));
    s.cash("1", "1000");
  };
  SECTION("a smaller remainder at the same limit keeps priority; a larger one loses it") {
    Scenario s;
    rest_two(s);
    s.step(tx("1", "<replace id=\"1\" shares=\"60\" limit=\"10\"/>"),
           results("<replaced id=\"1\" shares=\"60\" limit=\"10\"/>"));
    s.cash("1", "1400");
    s.step(tx("1", "<replace id=\"1\" shares=\"60\" limit=\"10\"/>"),  // changes nothing
           results("<replaced id=\"1\" shares=\"60\" limit=\"10\"/>"));
    s.cash("1", "1400");
    s.step(tx("3", "<order sym=\"X\" amount=\"-10\" limit=\"10\"/>"),
           results("<opened sym=\"X\" amount=\"-10\" limit=\"10\" id=\"3\"/>"));
    const std::string t = std::to_string(s.now());
    s.step(
        tx("1", "<query id=\"1\"/>"),
        results(
            "<status id=\"1\"><open shares=\"50\"/><executed shares=\"10\" price=\"10\" time=\"" +
            t + "\"/></status>"));
    s.step(tx("1", "<replace id=\"1\" shares=\"90\" limit=\"10\"/>"),  // back up: behind order 2
           results("<replaced id=\"1\" shares=\"90\" limit=\"10\"/>"));
    s.cash("1", "1000");
    s.step(tx("3", "<order sym=\"X\" amount=\"-50\" limit=\"10\"/>"),
           results("<opened sym=\"X\" amount=\"-50\" limit=\"10\" id=\"4\"/>"));
    const std::string t2 = std::to_string(s.now());
    s.step(
        tx("2", "<query id=\"2\"/>"),
        results(
            "<status id=\"2\"><open shares=\"50\"/><executed shares=\"50\" price=\"10\" time=\"" +
            t2 + "\"/></status>"));
    s.step(
        tx("1", "<query id=\"1\"/>"),
        results(
            "<status id=\"1\"><open shares=\"90\"/><executed shares=\"10\" price=\"10\" time=\"" +
            t + "\"/></status>"));
  }
  SECTION("another limit loses priority and may match at once") {
    Scenario s;
    rest_two(s);
    s.step(tx("1", "<replace id=\"1\" shares=\"60\" limit=\"10\"/>"),
           results("<replaced id=\"1\" shares=\"60\" limit=\"10\"/>"));
    s.step(tx("1", "<replace id=\"1\" shares=\"60\" limit=\"10.5\"/>"),
           results("<replaced id=\"1\" shares=\"60\" limit=\"10.5\"/>"));
    s.cash("1", "1370");  // 30 more
    s.step(tx("3", "<order sym=\"X\" amount=\"-50\" limit=\"10\"/>"),
           results("<opened sym=\"X\" amount=\"-50\" limit=\"10\" id=\"3\"/>"));
    const std::string t = std::to_string(s.now());
    s.step(
        tx("1", "<query id=\"1\"/>"),
        results(
            "<status id=\"1\"><open shares=\"10\"/><executed shares=\"50\" price=\"10.5\" time=\"" +
            t + "\"/></status>"));
    // A sell replaced below the best bid executes at once, at the bid's price.
    s.step(tx("3", "<order sym=\"X\" amount=\"-20\" limit=\"12\"/>"),
           results("<opened sym=\"X\" amount=\"-20\" limit=\"12\" id=\"4\"/>"));
    s.step(tx("3", "<replace id=\"4\" shares=\"15\" limit=\"9\"/><query id=\"4\"/>"),
           results("<replaced id=\"4\" shares=\"15\" limit=\"9\"/>"
                   "<status id=\"4\"><executed shares=\"10\" price=\"10.5\" time=\"" +
                   s.t() + "\"/><executed shares=\"5\" price=\"10\" time=\"" + s.t() +
                   "\"/></status>"));
  }
  SECTION("refusals change nothing") {
    Scenario s;
    rest_two(s);
    s.step(
        tx("1",
           "<replace id=\"2\" shares=\"10\" limit=\"10\"/><replace id=\"99\" shares=\"10\" "
           "limit=\"10\"/>"
           "<replace id=\"1\" shares=\"201\" limit=\"10\"/><replace id=\"1\" shares=\"0\" "
           "limit=\"10\"/>"),
        results("<error id=\"2\" shares=\"10\" limit=\"10\">No such order for this account</error>"
                "<error id=\"99\" shares=\"10\" limit=\"10\">No such order for this account</error>"
                "<error id=\"1\" shares=\"201\" limit=\"10\">"
                "Insufficient funds: order needs 1010, balance is 1000</error>"
                "<error id=\"1\" shares=\"0\" limit=\"10\">~Invalid shares</error>"));
    s.cash("1", "1000");
    s.step(
        tx("1",
           "<order sym=\"X\" amount=\"5\" limit=\"10\" stop=\"20\"/><replace id=\"3\" shares=\"5\" "
           "limit=\"11\"/>"
           "<order sym=\"X\" amount=\"5\" limit=\"10\" tif=\"IOC\"/><replace id=\"4\" shares=\"5\" "
           "limit=\"11\"/>"),
        results(
            "<opened sym=\"X\" amount=\"5\" limit=\"10\" stop=\"20\" id=\"3\"/>"
            "<error id=\"3\" shares=\"5\" limit=\"11\">"
            "Order is a stop that has not triggered: cancel it and place a new one</error>"
            "<opened sym=\"X\" amount=\"5\" limit=\"10\" tif=\"IOC\" id=\"4\"/>"
            "<error id=\"4\" shares=\"5\" limit=\"11\">Order has nothing open to replace</error>"));
    // 4.7: a waiting stop is canceled whole, its reservation back; then it has nothing open.
    s.cash("1", "950");
    s.step(
        tx("1", "<cancel id=\"3\"/><replace id=\"3\" shares=\"5\" limit=\"11\"/>"),
        results(
            "<canceled id=\"3\"><canceled shares=\"5\" time=\"" + s.t() +
            "\"/></canceled>"
            "<error id=\"3\" shares=\"5\" limit=\"11\">Order has nothing open to replace</error>"));
    s.cash("1", "1000");
  }
}
