// exchange-client bench's order types (--ioc-ratio, --market-ratio, --replace-ratio):
// option parsing, which child each draw gives, the XML of each type, the id pool that
// replaces draw from, and how their replies are judged.
#include "bench/order_mix.hpp"

#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "bench/options.hpp"
#include "bench/reply.hpp"
#include "bench/workload.hpp"

using namespace exch::bench;

namespace {

ParseOutcome::Kind parse(std::vector<const char*> args, BenchOptions& o) {
  args.insert(args.begin(), "bench");
  return parse_bench_options(static_cast<int>(args.size()), args.data(), o).kind;
}

std::string parse_error(std::vector<const char*> args) {
  BenchOptions o;
  args.insert(args.begin(), "bench");
  ParseOutcome out = parse_bench_options(static_cast<int>(args.size()), args.data(), o);
  return out.kind == ParseOutcome::Error ? out.message : "";
}

// A reply to `r` that opens every order and replaces every replace, with ids
// "<prefix><n>" from `next` on; queries and cancels get a <status>/<canceled>.
ReplyVerdict all_served(const Request& r, const std::string& prefix, int& next) {
  ReplyVerdict v;
  v.parsed = v.positional = true;
  for (const Child& c : r.children) {
    if (c.kind == ChildKind::Order)
      v.opened_ids.push_back(prefix + std::to_string(next++));
    else if (c.kind == ChildKind::Replace)
      v.opened_ids.push_back(c.ids.at(0));
    else
      v.opened_ids.emplace_back();
  }
  return v;
}

}  // namespace

TEST_CASE("order types: the ratios are parsed and checked", "[options][order-types]") {
  BenchOptions o;
  REQUIRE(parse({"--ioc-ratio", "0.3", "--market-ratio", "0.1", "--replace-ratio", "0.1"}, o) ==
          ParseOutcome::Run);
  CHECK(o.order_types.ioc == 0.3);
  CHECK(o.order_types.market == 0.1);
  CHECK(o.order_types.replace == 0.1);
  CHECK(o.order_types.any());

  BenchOptions d;
  REQUIRE(parse({}, d) == ParseOutcome::Run);
  CHECK_FALSE(d.order_types.any());

  CHECK(parse_error({"--ioc-ratio", "0.5", "--market-ratio", "0.4", "--replace-ratio", "0.2"}) ==
        "--ioc-ratio + --market-ratio + --replace-ratio must be <= 1");
  CHECK(parse_error({"--market-ratio", "-0.1"}) ==
        "--ioc-ratio, --market-ratio and --replace-ratio must be 0..1");
  CHECK(parse_error({"--replace-ratio", "1.5"}) ==
        "--ioc-ratio, --market-ratio and --replace-ratio must be 0..1");
  CHECK(parse_error({"--ioc-ratio", "nan"}) ==
        "--ioc-ratio, --market-ratio and --replace-ratio must be 0..1");
  CHECK(parse_error({"--workload", "query", "--ioc-ratio", "0.1"}) ==
        "--ioc-ratio, --market-ratio and --replace-ratio need the orders or mixed workload");
  CHECK(parse_error({"--workload", "create", "--replace-ratio", "0.1"}) ==
        "--ioc-ratio, --market-ratio and --replace-ratio need the orders or mixed workload");
  CHECK_FALSE(parse_error({"--replace-ratio", "x"}).empty());
  // Zero is allowed with any workload (it is the default).
  CHECK(parse_error({"--workload", "query", "--ioc-ratio", "0"}).empty());

  // mixed: queries and cancels count too (defaults 0.2 and 0.1).
  CHECK(parse_error({"--workload", "mixed", "--ioc-ratio", "0.5", "--market-ratio", "0.3"}) ==
        "mixed: --query-ratio + --cancel-ratio + --ioc-ratio + --market-ratio + "
        "--replace-ratio must be <= 1");
  CHECK(
      parse_error({"--workload", "orders", "--ioc-ratio", "0.5", "--market-ratio", "0.3"}).empty());
  // 0.2 + 0.1 + 0.7 is 1.0000000000000002 in binary: still a sum of 1.
  CHECK(parse_error({"--workload", "mixed", "--ioc-ratio", "0.7"}).empty());
  CHECK(parse_error({"--ioc-ratio", "0.3", "--market-ratio", "0.3", "--replace-ratio", "0.4"})
            .empty());
}

TEST_CASE("order types: each draw falls in its share", "[order-types]") {
  OrderTypeMix m;
  m.ioc = 0.3;
  m.market = 0.2;
  m.replace = 0.1;
  CHECK(order_type_for(m, 0.0) == OrderType::Ioc);
  CHECK(order_type_for(m, 0.2999) == OrderType::Ioc);
  CHECK(order_type_for(m, 0.3) == OrderType::Market);
  CHECK(order_type_for(m, 0.4999) == OrderType::Market);
  CHECK(order_type_for(m, 0.5) == OrderType::Replace);
  CHECK(order_type_for(m, 0.5999) == OrderType::Replace);
  CHECK(order_type_for(m, 0.6001) == OrderType::Limit);
  CHECK(order_type_for(m, 0.9999) == OrderType::Limit);
  CHECK(order_type_for(OrderTypeMix{}, 0.0) == OrderType::Limit);
  OrderTypeMix only_replace;
  only_replace.replace = 1;
  CHECK(order_type_for(only_replace, 0.0) == OrderType::Replace);
  CHECK(order_type_for(only_replace, 0.9999) == OrderType::Replace);
}

TEST_CASE("order types: without the ratios the requests are exactly those of before",
          "[workload][order-types]") {
  // The text below is what this seed gave before the order types existed (same draws,
  // same attributes): a default bench sends the same bytes.
  std::string out;
  for (WorkloadKind kind : {WorkloadKind::Orders, WorkloadKind::Mixed}) {
    BenchOptions o;
    o.workload = kind;
    o.accounts = 2;
    o.orders_per_request = 4;
    o.price_decimals = 1;
    Workload w(o);
    Rng rng(7);
    for (int i = 0; i < 3; ++i) {
      Request r = w.next(rng);
      if (i == 0) {
        int next = 100;
        ReplyVerdict v = all_served(r, "", next);
        w.learn(r, {&v});
      }
      out += "----\n" + r.render(0);
    }
  }
  const char* before =
      "----\n<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<transactions id=\"900000001\">\n"
      "  <order sym=\"S8\" amount=\"59\" limit=\"94.8\"/>\n"
      "  <order sym=\"S17\" amount=\"-13\" limit=\"92.2\"/>\n"
      "  <order sym=\"S8\" amount=\"51\" limit=\"104.4\"/>\n"
      "  <order sym=\"S0\" amount=\"-55\" limit=\"96.4\"/>\n</transactions>\n"
      "----\n<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<transactions id=\"900000000\">\n"
      "  <order sym=\"S15\" amount=\"86\" limit=\"106.8\"/>\n"
      "  <order sym=\"S16\" amount=\"-33\" limit=\"106.9\"/>\n"
      "  <order sym=\"S12\" amount=\"-65\" limit=\"95.2\"/>\n"
      "  <order sym=\"S8\" amount=\"3\" limit=\"93.1\"/>\n</transactions>\n"
      "----\n<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<transactions id=\"900000001\">\n"
      "  <order sym=\"S19\" amount=\"23\" limit=\"91.6\"/>\n"
      "  <order sym=\"S13\" amount=\"-51\" limit=\"103.7\"/>\n"
      "  <order sym=\"S16\" amount=\"-30\" limit=\"95.0\"/>\n"
      "  <order sym=\"S0\" amount=\"-40\" limit=\"105.9\"/>\n</transactions>\n"
      "----\n<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<transactions id=\"900000001\">\n"
      "  <order sym=\"S9\" amount=\"-8\" limit=\"104.0\"/>\n"
      "  <order sym=\"S12\" amount=\"89\" limit=\"104.7\"/>\n"
      "  <order sym=\"S19\" amount=\"-3\" limit=\"109.2\"/>\n"
      "  <order sym=\"S4\" amount=\"36\" limit=\"100.0\"/>\n</transactions>\n"
      "----\n<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<transactions id=\"900000001\">\n"
      "  <order sym=\"S16\" amount=\"-51\" limit=\"95.8\"/>\n"
      "  <order sym=\"S4\" amount=\"69\" limit=\"93.5\"/>\n"
      "  <cancel id=\"102\"/>\n  <query id=\"100\"/>\n</transactions>\n"
      "----\n<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<transactions id=\"900000001\">\n"
      "  <order sym=\"S17\" amount=\"83\" limit=\"94.9\"/>\n"
      "  <order sym=\"S16\" amount=\"-30\" limit=\"95.0\"/>\n"
      "  <query id=\"103\"/>\n  <order sym=\"S9\" amount=\"-58\" limit=\"107.8\"/>\n"
      "</transactions>\n";
  CHECK(out == before);
}

TEST_CASE("order types: IOC, market and replace children in their shares, as XML",
          "[workload][order-types]") {
  BenchOptions o;
  o.accounts = 1;
  o.symbols = 2;
  o.orders_per_request = 10;
  o.order_types.ioc = 0.3;
  o.order_types.market = 0.2;
  o.order_types.replace = 0.1;
  Workload w(o), w2(o);
  Rng rng(5), rng2(5);
  int ioc = 0, market = 0, replace = 0, gtc = 0;
  std::set<std::string> gtc_ids, replaced_ids;
  int next = 1;
  for (int i = 0; i < 1000; ++i) {
    Request r = w.next(rng);
    CHECK(r.render(0) == w2.next(rng2).render(0));  // reproducible from the seed
    auto root = parse_xml(r.render(0));
    REQUIRE(root);
    REQUIRE(root->children.size() == r.children.size());
    for (const XmlNode& x : root->children) {
      const std::string* tif = x.attr("tif");
      if (x.name == "replace") {
        ++replace;
        long shares = std::stol(*x.attr("shares"));
        CHECK((shares >= 1 && shares <= 100));
        double limit = std::stod(*x.attr("limit"));  // test only: range check
        CHECK((limit >= 90 && limit <= 110));
        // Only ids of GTC orders (they may rest), never an IOC's or a market order's.
        CHECK(gtc_ids.count(*x.attr("id")) == 1);
        replaced_ids.insert(*x.attr("id"));
        continue;
      }
      REQUIRE(x.name == "order");
      long amount = std::stol(*x.attr("amount"));
      CHECK((amount != 0 && std::labs(amount) <= 100));
      if (!tif) {
        REQUIRE(x.attr("limit"));
        ++gtc;
        continue;
      }
      CHECK(*tif == "IOC");
      ++(x.attr("limit") ? ioc : market);  // a market order is one without a limit
    }
    ReplyVerdict v = all_served(r, "", next);
    for (std::size_t k = 0; k < r.children.size(); ++k)
      if (r.children[k].kind == ChildKind::Order && may_rest(r.children[k]))
        gtc_ids.insert(v.opened_ids[k]);
    w.learn(r, {&v});
    w2.learn(r, {&v});  // the same request and reply: w2 stays w's twin
  }
  // 10000 children: IOC 30 %, market 20 %, replace 10 % (the first request's replaces are
  // plain orders: nothing was known yet).
  CHECK(ioc + market + replace + gtc == 10000);
  CHECK(ioc > 2800);  // expected 3000; sd about 46
  CHECK(ioc < 3200);
  CHECK(market > 1800);  // expected 2000; sd 40
  CHECK(market < 2200);
  CHECK(replace > 880);  // expected 999; sd 30
  CHECK(replace < 1100);
  CHECK(gtc > 3750);  // expected 4001; sd 49
  CHECK(gtc < 4250);
  CHECK(replaced_ids.size() > 100);
}

TEST_CASE("order types: market and IOC orders render their attributes, replace its own",
          "[workload][order-types]") {
  Child limit;
  limit.sym = "X";
  limit.amount = "-7";
  limit.limit = "10.5";
  Request r;
  r.transactions = true;
  r.account = "42";
  r.children = {limit, as_ioc(limit), as_market(limit)};
  Rng rng(1);
  r.children.push_back(replace_of({"11", "12"}, rng, 2));
  std::string x0 = r.render(0), x1 = r.render(1);
  CHECK(x0.find("  <order sym=\"X\" amount=\"-7\" limit=\"10.5\"/>\n") != std::string::npos);
  CHECK(x0.find("  <order sym=\"X\" amount=\"-7\" limit=\"10.5\" tif=\"IOC\"/>\n") !=
        std::string::npos);
  CHECK(x0.find("  <order sym=\"X\" amount=\"-7\" tif=\"IOC\"/>\n") != std::string::npos);
  const Child& rep = r.children[3];
  CHECK(rep.kind == ChildKind::Replace);
  CHECK(rep.limit.size() - rep.limit.find('.') == 3);  // two decimals
  CHECK(x0.find("  <replace id=\"11\" shares=\"" + rep.shares + "\" limit=\"" + rep.limit +
                "\"/>\n") != std::string::npos);
  CHECK(x1.find("<replace id=\"12\"") != std::string::npos);  // the other target's id
  CHECK(r.kinds() == std::vector<ChildKind>{ChildKind::Order, ChildKind::Order, ChildKind::Order,
                                            ChildKind::Replace});
  CHECK(may_rest(r.children[0]));
  CHECK_FALSE(may_rest(r.children[1]));
  CHECK_FALSE(may_rest(r.children[2]));
  CHECK(may_rest(r.children[3]));
}

TEST_CASE("order types: a replace takes its id; <replaced> gives it back, a refusal not",
          "[workload][order-types]") {
  BenchOptions o;
  o.accounts = 1;
  o.orders_per_request = 1;
  o.order_types.replace = 1;
  Workload w(o);
  Rng rng(2);
  Request first = w.next(rng);  // nothing known: a plain order
  REQUIRE(first.children.at(0).kind == ChildKind::Order);
  CHECK(first.children[0].tif.empty());
  ReplyVerdict opened;
  opened.positional = true;
  opened.opened_ids = {"7"};
  w.learn(first, {&opened});
  CHECK(w.id_pool_size() == 1);

  Request rep = w.next(rng);
  REQUIRE(rep.children.at(0).kind == ChildKind::Replace);
  CHECK(rep.children[0].ids == std::vector<std::string>{"7"});
  CHECK(w.id_pool_size() == 0);  // in flight: no other child names it meanwhile
  auto replaced = classify_reply("<results><replaced id=\"7\" shares=\"" + rep.children[0].shares +
                                     "\" limit=\"" + rep.children[0].limit + "\"/></results>",
                                 rep.kinds(), o.reject_words);
  CHECK(replaced.ok_items == 1);
  REQUIRE(replaced.opened_ids.size() == 1);
  CHECK(replaced.opened_ids[0] == "7");
  w.learn(rep, {&replaced});
  CHECK(w.id_pool_size() == 1);

  Request again = w.next(rng);
  REQUIRE(again.children.at(0).kind == ChildKind::Replace);
  auto refused = classify_reply(
      "<results><error id=\"7\" shares=\"1\" limit=\"1\">Order has nothing open to "
      "replace</error></results>",
      again.kinds(), o.reject_words);
  // Served, not a failure of the bench: the order filled since it was learned.
  CHECK(refused.rejected_items == 1);
  CHECK(refused.error_items == 0);
  CHECK(refused.rejected_texts == std::vector<std::string>{"Order has nothing open to replace"});
  w.learn(again, {&refused});
  CHECK(w.id_pool_size() == 0);  // filled orders are not tried again
  CHECK(w.next(rng).children.at(0).kind == ChildKind::Order);
}

TEST_CASE("order types: IOC and market ids are not learned for replaces or cancels",
          "[workload][order-types]") {
  BenchOptions o;
  o.accounts = 1;
  o.orders_per_request = 20;
  o.order_types.ioc = 0.5;
  o.order_types.market = 0.5;
  Workload w(o);
  Rng rng(4);
  Request r = w.next(rng);
  for (const Child& c : r.children) {
    CHECK(c.tif == "IOC");
    CHECK_FALSE(may_rest(c));
  }
  int next = 1;
  ReplyVerdict v = all_served(r, "", next);
  w.learn(r, {&v});
  CHECK(w.id_pool_size() == 0);
}

TEST_CASE("order types: replace replies are judged and voted like cancels",
          "[reply][order-types]") {
  std::vector<ChildKind> kinds{ChildKind::Replace, ChildKind::Replace};
  auto v = classify_reply(
      "<results><replaced id=\"3\" shares=\"5\" limit=\"100\"/>"
      "<error id=\"4\" shares=\"5\" limit=\"100\">Insufficient funds: order needs 5, balance is "
      "1</error></results>",
      kinds, {"insufficient"});
  CHECK(v.ok_items == 1);
  CHECK(v.rejected_items == 1);
  CHECK(v.error_items == 0);
  CHECK(v.opened_ids == std::vector<std::string>{"3", ""});
  // Replicas answer with their own ids: only the ids differ, so the replies agree.
  std::string a =
      "<results><replaced id=\"3\" shares=\"5\" limit=\"100\"/><error id=\"4\" shares=\"5\" "
      "limit=\"100\">No such order for this account</error></results>";
  std::string b =
      "<results><replaced id=\"93\" shares=\"5\" limit=\"100\"/><error id=\"94\" shares=\"5\" "
      "limit=\"100\">No such order for this account</error></results>";
  std::string c =
      "<results><replaced id=\"3\" shares=\"6\" limit=\"100\"/><error id=\"4\" shares=\"5\" "
      "limit=\"100\">No such order for this account</error></results>";
  CHECK(normalize_for_vote(a, kinds) == normalize_for_vote(b, kinds));
  CHECK(normalize_for_vote(a, kinds) != normalize_for_vote(c, kinds));
}
