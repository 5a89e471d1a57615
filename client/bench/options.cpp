#include "bench/options.hpp"

#include <chrono>
#include <iostream>
#include <sstream>

#include <boost/program_options.hpp>

namespace po = boost::program_options;

namespace exch::bench {

const char* to_string(LoopMode m) { return m == LoopMode::Closed ? "closed" : "open"; }
const char* to_string(ThreadMode t) { return t == ThreadMode::Pool ? "pool" : "spawn"; }
const char* to_string(WorkloadKind w) {
  switch (w) {
    case WorkloadKind::Create:
      return "create";
    case WorkloadKind::Orders:
      return "orders";
    case WorkloadKind::Mixed:
      return "mixed";
    case WorkloadKind::Query:
      return "query";
  }
  return "?";
}

namespace {

// Trading account ids stay below this (at most 10 digits); created ones have 11+.
constexpr std::uint64_t kMaxTradingAccountEnd = 10'000'000'000ull;

struct Raw {
  std::string mode = "closed", workload = "orders", threads = "pool", replicas, servers,
              reject_words, class_mix;
  bool setup = false, no_setup = false, no_progress = false;
  unsigned port = 12345;
};

po::options_description describe(BenchOptions& o, Raw& r) {
  po::options_description target("Target");
  target.add_options()("host", po::value(&o.host)->default_value(o.host), "server host")(
      "port", po::value(&r.port)->default_value(r.port), "server port")(
      "replicas", po::value(&r.replicas),
      "replica mode: HOST:PORT,HOST:PORT,... every request goes to all of them "
      "concurrently; replies are compared (ids of opened/status/canceled and time "
      "attributes ignored); --host/--port are then ignored")(
      "servers", po::value(&r.servers),
      "failover mode: HOST:PORT,HOST:PORT,... an active server and its standbys; each "
      "request goes to the one that serves, and to another only when none can have applied "
      "it; a request without a reply counts as an error (outcome unknown), never resent; "
      "--host/--port are then ignored")(
      "failover-wait", po::value(&o.failover_wait_s)->default_value(o.failover_wait_s),
      "with --servers: seconds a request keeps trying them in turn while none serves")(
      "persistent", po::bool_switch(&o.persistent),
      "use persistent sessions (\"EXCHANGE-SESSION 1\" extension) instead of one "
      "request per connection")("timeout", po::value(&o.timeout_s)->default_value(o.timeout_s),
                                "seconds a whole reply may take")(
      "connect-timeout", po::value(&o.connect_timeout_s)->default_value(o.connect_timeout_s),
      "seconds a TCP connect (and the TLS handshake) may take");

  po::options_description load("Load");
  load.add_options()(
      "mode", po::value(&r.mode)->default_value(r.mode),
      "closed: --clients clients send back to back; open: Poisson arrivals at --rate, "
      "latency measured from the intended send time")(
      "clients", po::value(&o.clients)->default_value(o.clients),
      "closed loop: concurrent clients")(
      "think-ms", po::value(&o.think_ms)->default_value(o.think_ms),
      "closed loop: mean of an exponential think time between a reply and the next "
      "request (0 = none)")("rate", po::value(&o.rate)->default_value(o.rate),
                            "open loop: arrivals per second")(
      "senders", po::value(&o.senders)->default_value(o.senders),
      "open loop: sender threads (pool mode)")(
      "max-inflight", po::value(&o.max_inflight)->default_value(o.max_inflight),
      "open loop: arrivals while this many requests are queued or in flight are "
      "dropped and counted as 'dropped'")(
      "client-threads", po::value(&r.threads)->default_value(r.threads),
      "pool: pre-started threads (and one living thread per replica); spawn: a new "
      "thread per request (and per replica)")("requests", po::value(&o.requests),
                                              "measured requests (default 1000 unless --duration)")(
      "duration", po::value(&o.duration_s), "measured seconds (instead of --requests)")(
      "warmup", po::value(&o.warmup_s)->default_value(o.warmup_s),
      "seconds of load before measuring; those requests are excluded from statistics")(
      "repeat", po::value(&o.repeat)->default_value(o.repeat),
      "repetitions of the measurement (95% confidence intervals over them)")(
      "seed", po::value(&o.seed)->default_value(o.seed), "seed of every random choice");

  po::options_description work("Workload");
  work.add_options()(
      "workload", po::value(&r.workload)->default_value(r.workload),
      "create: new accounts each with a position; orders: <transactions> of random "
      "orders; mixed: orders, queries and cancels of ids from earlier replies; query: "
      "only queries")("accounts-per-request",
                      po::value(&o.accounts_per_request)->default_value(o.accounts_per_request),
                      "create: new accounts per request")(
      "orders-per-request", po::value(&o.orders_per_request)->default_value(o.orders_per_request),
      "orders/mixed/query: children per <transactions> request")(
      "class-mix", po::value(&r.class_mix),
      "orders/mixed/query: request classes in one stream, CHILDREN:WEIGHT,... e.g. "
      "1:10,8:20,10:20,50:50 (seed 001's Table 1 when the server runs with "
      "--simulated-io-ms-per-child); each request draws its class; replaces "
      "--orders-per-request; latency is also reported per class")(
      "price-decimals", po::value(&o.price_decimals)->default_value(o.price_decimals),
      "fractional digits of limit prices (uniform 90..110)")(
      "symbols", po::value(&o.symbols)->default_value(o.symbols), "symbols traded")(
      "symbol-prefix", po::value(&o.symbol_prefix)->default_value(o.symbol_prefix),
      "symbol names are PREFIX0, PREFIX1, ...")(
      "accounts", po::value(&o.accounts)->default_value(o.accounts), "trading accounts")(
      "account-base", po::value(&o.account_base)->default_value(o.account_base),
      "trading account ids are account-base + i, i = 0 .. accounts-1 (the default keeps "
      "them apart from the examples' 1001/1002 and from small ids; account-base + "
      "accounts must stay below 10000000000)")(
      "query-ratio", po::value(&o.query_ratio)->default_value(o.query_ratio, "0.2"),
      "mixed: share of children that are queries")(
      "cancel-ratio", po::value(&o.cancel_ratio)->default_value(o.cancel_ratio, "0.1"),
      "mixed: share of children that are cancels")(
      "ioc-ratio", po::value(&o.order_types.ioc)->default_value(0, "0"),
      "orders/mixed: share of children that are IOC limit orders (tif=\"IOC\": what does "
      "not execute at once is canceled)")(
      "market-ratio", po::value(&o.order_types.market)->default_value(0, "0"),
      "orders/mixed: share of children that are market orders (no limit, tif=\"IOC\"); a "
      "buy pays from --balance at the resting orders' prices")(
      "replace-ratio", po::value(&o.order_types.replace)->default_value(0, "0"),
      "orders/mixed: share of children that replace one of the account's own GTC orders "
      "learned from <opened> replies (new shares 1..100 and limit in the price range; a "
      "plain order while none is known); a refusal (e.g. filled meanwhile) counts as "
      "'rejected'. The ratios, with --query-ratio and --cancel-ratio in mixed, sum to <= 1")(
      "reject-words",
      po::value(&r.reject_words)->default_value("insufficient,not enough,too low,exceed"),
      "an <error> answering an order whose text contains one of these "
      "(case-insensitive) counts as 'rejected' (served), not as an error")(
      "run-id", po::value(&o.run_id),
      "1-9 digits identifying this run: the create workload's account ids are 9, the "
      "run id padded to 9 digits, and a counter (11 or more digits: never a trading "
      "account; default: derived from --seed and the clock, so reruns do not collide)")(
      "setup", po::bool_switch(&r.setup),
      "create the trading accounts and symbols first (default for orders/mixed/query)")(
      "no-setup", po::bool_switch(&r.no_setup), "skip the setup step")(
      "setup-only", po::bool_switch(&o.setup_only), "run the setup step and stop")(
      "setup-batch", po::value(&o.setup_batch)->default_value(o.setup_batch),
      "accounts per setup <create> request")(
      "balance", po::value(&o.balance)->default_value(o.balance),
      "setup: cash of each trading account (decimal string)")(
      "shares", po::value(&o.shares)->default_value(o.shares),
      "setup: shares of every symbol in each trading account (decimal string)");

  po::options_description out("Output");
  out.add_options()("json", po::value(&o.json_path), "write the summary (and repetitions) as JSON")(
      "csv", po::value(&o.csv_path), "write one row per request")("label", po::value(&o.label),
                                                                  "text copied into the JSON")(
      "no-progress", po::bool_switch(&r.no_progress), "no progress line on stderr")("help,h",
                                                                                    "this help");

  po::options_description all("exchange-client bench [options]");
  all.add(target).add(security_options(o.security)).add(load).add(work).add(out);
  return all;
}

bool is_decimal(const std::string& s) {
  std::size_t i = 0, digits = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    std::size_t frac = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++frac;
    if (frac == 0) return false;
  }
  return digits > 0 && i == s.size();
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (c != ' ' || !cur.empty()) {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// --ioc-ratio, --market-ratio, --replace-ratio: each 0..1, for the workloads that send
// orders, with a sum (and, in mixed, the query and cancel ratios) of at most 1.
std::string check_order_types(const BenchOptions& o) {
  const OrderTypeMix& m = o.order_types;
  for (double share : {m.ioc, m.market, m.replace})
    if (!(share >= 0 && share <= 1))
      return "--ioc-ratio, --market-ratio and --replace-ratio must be 0..1";
  if (!m.any()) return "";
  const double slack = 1e-9;  // 0.2 + 0.1 + 0.7 is 1.0000000000000002 in binary
  if (o.workload != WorkloadKind::Orders && o.workload != WorkloadKind::Mixed)
    return "--ioc-ratio, --market-ratio and --replace-ratio need the orders or mixed workload";
  if (o.workload == WorkloadKind::Orders && m.total() > 1 + slack)
    return "--ioc-ratio + --market-ratio + --replace-ratio must be <= 1";
  if (o.workload == WorkloadKind::Mixed && o.query_ratio + o.cancel_ratio + m.total() > 1 + slack)
    return "mixed: --query-ratio + --cancel-ratio + --ioc-ratio + --market-ratio + "
           "--replace-ratio must be <= 1";
  return "";
}

}  // namespace

void print_bench_help(std::ostream& os) {
  BenchOptions o;
  Raw r;
  os << "Load generator for the exchange server.\n\n"
     << describe(o, r) << "\n"
     << "Statistics count measured requests only (those whose intended start is after\n"
        "--warmup). Latency is end - intended start (closed loop: the actual start).\n"
        "Percentiles are nearest-rank on the sorted samples. Latency, throughput and\n"
        "jitter use served requests (ok or rejected); error replies and connection\n"
        "errors are counted separately.\n";
}

ParseOutcome parse_bench_options(int argc, const char* const* argv, BenchOptions& o) {
  Raw r;
  auto desc = describe(o, r);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).run(), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    return {ParseOutcome::Error, e.what()};
  }
  if (vm.count("help")) return {ParseOutcome::Help, ""};

  std::ostringstream cmd;
  cmd << "exchange-client";
  for (int i = 0; i < argc; ++i) cmd << " " << argv[i];
  o.command_line = cmd.str();

  auto fail = [](const std::string& m) { return ParseOutcome{ParseOutcome::Error, m}; };
  if (r.port == 0 || r.port > 65535) return fail("--port must be 1..65535");
  o.port = static_cast<std::uint16_t>(r.port);

  if (r.mode == "closed")
    o.mode = LoopMode::Closed;
  else if (r.mode == "open")
    o.mode = LoopMode::Open;
  else
    return fail("--mode must be closed or open");

  if (r.threads == "pool")
    o.threads = ThreadMode::Pool;
  else if (r.threads == "spawn")
    o.threads = ThreadMode::Spawn;
  else
    return fail("--client-threads must be pool or spawn");

  if (r.workload == "create")
    o.workload = WorkloadKind::Create;
  else if (r.workload == "orders")
    o.workload = WorkloadKind::Orders;
  else if (r.workload == "mixed")
    o.workload = WorkloadKind::Mixed;
  else if (r.workload == "query")
    o.workload = WorkloadKind::Query;
  else
    return fail("--workload must be create, orders, mixed or query");

  if (r.setup && r.no_setup) return fail("--setup and --no-setup together");
  o.setup = r.setup || (!r.no_setup && o.workload != WorkloadKind::Create);
  if (o.setup_only) o.setup = true;

  o.progress = !r.no_progress;
  o.replicas = split_list(r.replicas);
  o.servers = split_list(r.servers);
  if (!o.replicas.empty() && !o.servers.empty()) return fail("--replicas and --servers together");
  if (!(o.failover_wait_s >= 0)) return fail("--failover-wait must not be negative");
  if (std::string bad = check_security_flags(o.security); !bad.empty()) return fail(bad);
  o.reject_words = split_list(r.reject_words);

  if (vm.count("requests") && vm.count("duration"))
    return fail("give --requests or --duration, not both");
  if (vm.count("requests") && o.requests == 0) return fail("--requests must be positive");
  if (vm.count("duration") && !(o.duration_s > 0)) return fail("--duration must be positive");
  if (!vm.count("requests") && !vm.count("duration")) o.requests = 1000;
  if (!(o.warmup_s >= 0)) return fail("--warmup must be >= 0");
  if (o.repeat == 0) return fail("--repeat must be >= 1");
  if (o.clients == 0) return fail("--clients must be >= 1");
  if (!(o.think_ms >= 0)) return fail("--think-ms must be >= 0");
  if (!(o.rate > 0)) return fail("--rate must be positive");
  if (o.senders == 0) return fail("--senders must be >= 1");
  if (o.max_inflight == 0) return fail("--max-inflight must be >= 1");
  if (!(o.timeout_s > 0) || !(o.connect_timeout_s > 0)) return fail("timeouts must be positive");
  if (o.accounts_per_request == 0) return fail("--accounts-per-request must be >= 1");
  if (o.orders_per_request == 0) return fail("--orders-per-request must be >= 1");
  if (!r.class_mix.empty()) {
    if (o.workload == WorkloadKind::Create) return fail("--class-mix needs orders, mixed or query");
    for (const std::string& item : split_list(r.class_mix)) {
      auto colon = item.find(':');
      unsigned long children = 0;
      double weight = 0;
      try {
        std::size_t used = 0;
        if (colon == std::string::npos) throw std::invalid_argument(item);
        children = std::stoul(item.substr(0, colon), &used);
        if (used != colon) throw std::invalid_argument(item);
        weight = std::stod(item.substr(colon + 1), &used);
        if (used != item.size() - colon - 1) throw std::invalid_argument(item);
      } catch (const std::exception&) {
        return fail("--class-mix: '" + item + "' is not CHILDREN:WEIGHT (e.g. 8:20)");
      }
      if (children == 0 || children > 10000)
        return fail("--class-mix: children must be 1..10000 in '" + item + "'");
      if (!(weight > 0)) return fail("--class-mix: weight must be positive in '" + item + "'");
      o.class_mix.push_back({static_cast<unsigned>(children), weight});
    }
    if (o.class_mix.empty()) return fail("--class-mix is empty");
  }
  if (o.price_decimals > 6) return fail("--price-decimals must be 0..6");
  if (o.symbols == 0) return fail("--symbols must be >= 1");
  if (o.accounts == 0) return fail("--accounts must be >= 1");
  // Created accounts have at least 11 digits; trading accounts must stay shorter.
  if (o.account_base > kMaxTradingAccountEnd - o.accounts)
    return fail(
        "--account-base + --accounts must stay below 10000000000 (created accounts "
        "of the create workload have 11 or more digits)");
  if (o.setup_batch == 0) return fail("--setup-batch must be >= 1");
  if (o.symbol_prefix.empty()) return fail("--symbol-prefix must not be empty");
  for (char c : o.symbol_prefix)
    if (!std::isalnum(static_cast<unsigned char>(c)))
      return fail("--symbol-prefix must be ASCII letters or digits");
  if (!(o.query_ratio >= 0 && o.cancel_ratio >= 0 && o.query_ratio + o.cancel_ratio <= 1))
    return fail("--query-ratio and --cancel-ratio must be >= 0 with a sum <= 1");
  if (std::string bad = check_order_types(o); !bad.empty()) return fail(bad);
  if (!is_decimal(o.balance)) return fail("--balance must be a decimal like 1000 or 12.5");
  if (!is_decimal(o.shares)) return fail("--shares must be a decimal like 1000 or 12.5");
  if (vm.count("run-id") && o.run_id.empty()) return fail("--run-id must not be empty");
  if (!o.run_id.empty()) {
    if (o.run_id.size() > 9) return fail("--run-id must have at most 9 digits");
    for (char c : o.run_id)
      if (c < '0' || c > '9') return fail("--run-id must be digits");
  } else {
    // 9 digits, first one non-zero; the clock keeps reruns with the same seed
    // apart (the id pads it to 9 digits anyway: Workload::created_prefix).
    auto now = std::chrono::system_clock::now().time_since_epoch();
    std::uint64_t x = static_cast<std::uint64_t>(
                          std::chrono::duration_cast<std::chrono::milliseconds>(now).count()) ^
                      (o.seed * 0x9E3779B97F4A7C15ull);
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 32;
    o.run_id = std::to_string(100000000 + x % 900000000);
  }
  return {ParseOutcome::Run, ""};
}

}  // namespace exch::bench
