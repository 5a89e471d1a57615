// Command line of `exchange-client bench`.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "connect_flags.hpp"

namespace exch::bench {

enum class LoopMode { Closed, Open };
enum class WorkloadKind { Create, Orders, Mixed, Query };
enum class ThreadMode { Pool, Spawn };

// --ioc-ratio, --market-ratio, --replace-ratio: shares of a request's children that are IOC
// limit orders, market orders (IOC) and replaces of the account's own resting orders
// (PROTOCOL.md sections 4.5, 4.6, 4.8). All zero: plain GTC limit orders, the requests and
// the random draws of every seed exactly as before these types existed.
enum class OrderType { Limit, Ioc, Market, Replace };
struct OrderTypeMix {
  double ioc = 0;
  double market = 0;
  double replace = 0;

  bool any() const { return ioc > 0 || market > 0 || replace > 0; }
  double total() const { return ioc + market + replace; }
};

struct BenchOptions {
  // where
  std::string host = "127.0.0.1";
  std::uint16_t port = 12345;
  std::vector<std::string> replicas;  // "host:port"; empty = just host:port
  std::vector<std::string> servers;   // --servers: "host:port", one of which serves
  double failover_wait_s = 10;        // --failover-wait
  bool persistent = false;
  double timeout_s = 30;
  double connect_timeout_s = 5;
  SecurityFlags security;  // --tls, --ca, --cert, --key, --tls-resume, --principal, ...

  // load shape
  LoopMode mode = LoopMode::Closed;
  unsigned clients = 1;
  double think_ms = 0;
  double rate = 100;
  unsigned senders = 64;
  unsigned max_inflight = 10000;
  ThreadMode threads = ThreadMode::Pool;
  std::uint64_t requests = 0;  // 0 with duration = 0 -> default 1000
  double duration_s = 0;
  double warmup_s = 0;
  unsigned repeat = 1;

  // what
  WorkloadKind workload = WorkloadKind::Orders;
  unsigned accounts_per_request = 1;
  unsigned orders_per_request = 1;
  // --class-mix: request classes by number of children, drawn per request with
  // these weights (empty = every request has orders_per_request children).
  struct RequestClass {
    unsigned children;
    double weight;
  };
  std::vector<RequestClass> class_mix;
  unsigned price_decimals = 0;
  unsigned symbols = 20;
  unsigned accounts = 200;
  // Trading accounts are account_base + i. Far above the examples' 1001/1002 and
  // the tests' small ids; created accounts (create workload) have 11 or more digits
  // (Workload::created_prefix), so neither can collide with the other.
  std::uint64_t account_base = 900000000;
  std::string symbol_prefix = "S";
  double query_ratio = 0.2;
  double cancel_ratio = 0.1;
  OrderTypeMix order_types;  // orders and mixed workloads
  bool setup = true;         // resolved from --setup/--no-setup and the workload
  bool setup_only = false;
  unsigned setup_batch = 50;
  std::string balance = "1000000000";
  std::string shares = "1000000000";
  std::vector<std::string> reject_words{"insufficient", "not enough", "too low", "exceed"};
  std::uint64_t seed = 1;
  std::string run_id;  // 1-9 digits; generated (9 digits) when empty

  // output
  std::string json_path;
  std::string csv_path;
  std::string label;
  bool progress = true;

  std::string command_line;  // for the JSON
};

struct ParseOutcome {
  enum Kind { Run, Help, Error } kind = Run;
  std::string message;
};

// argv[0] is "bench" (the subcommand) or the program; parsing starts at argv[1].
ParseOutcome parse_bench_options(int argc, const char* const* argv, BenchOptions& out);
void print_bench_help(std::ostream& os);

const char* to_string(LoopMode m);
const char* to_string(WorkloadKind w);
const char* to_string(ThreadMode t);

}  // namespace exch::bench
