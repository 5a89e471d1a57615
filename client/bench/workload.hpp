// Request generators for the benchmark workloads, the setup step, and the pool
// of order ids learned from <opened id=".."> replies (for queries, cancels and replaces).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "bench/options.hpp"
#include "bench/reply.hpp"
#include "bench/rng.hpp"

namespace exch::bench {

struct Child {
  ChildKind kind = ChildKind::Order;
  std::string sym, amount, limit;  // order (limit empty: a market order); replace: limit
  std::string tif;                 // order: "" (not written: GTC) or "IOC"
  std::string shares;              // replace: the new open remainder
  std::vector<std::string> ids;    // query/cancel/replace: the order id on each target
};

struct Request {
  bool transactions = false;
  std::size_t account_index = 0;  // transactions: index into the trading accounts
  std::string account;            // transactions: account id
  std::vector<Child> children;    // transactions
  std::string create_xml;         // create: the same document for every target
  std::vector<ChildKind> create_kinds;

  // Number of items: orders/queries/cancels, or created accounts + positions.
  std::size_t items() const;
  std::vector<ChildKind> kinds() const;
  // The XML document for target t (ids of queries/cancels differ per target).
  std::string render(std::size_t target) const;
};

// Order ids per trading account, one id per target (replicas give different ids).
class IdPool {
 public:
  IdPool(std::size_t accounts, std::size_t per_account_cap = 512);
  void add(std::size_t account, std::vector<std::string> ids_per_target);
  // A random id of that account; `take` removes it (cancels). False if none.
  bool pick(std::size_t account, Rng& rng, bool take, std::vector<std::string>& out);
  // A random account that has ids (false if the pool is empty).
  bool any_account(Rng& rng, std::size_t& account);
  std::size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::size_t cap_;
  std::vector<std::vector<std::vector<std::string>>> ids_;
  std::vector<std::size_t> with_ids_;  // accounts that have at least one id
  std::size_t total_ = 0;
};

class Workload {
 public:
  Workload(const BenchOptions& options);

  // Thread-safe; randomness comes only from `rng` (and the shared id pool).
  Request next(Rng& rng);
  // Learns order ids from the replies of every target (verdicts[t] for target t).
  void learn(const Request& request, const std::vector<const ReplyVerdict*>& verdicts);

  // Setup: <create> requests for the trading accounts and every symbol.
  std::vector<Request> setup_requests() const;
  // For the query workload: one batch of orders per account, so there is
  // something to query.
  std::vector<Request> seed_order_requests(Rng& rng);

  std::string account_id(std::size_t i) const;
  // The create workload's account ids are this prefix and a counter from 1: "9",
  // then --run-id padded to 9 digits. At least 11 digits, so never a trading
  // account (account-base + i stays below 10^10), nor the examples' 1001/1002 or
  // the tests' small ids; a fixed-length prefix keeps the ids of two run ids apart.
  const std::string& created_prefix() const { return created_prefix_; }
  std::string symbol(std::size_t i) const;
  std::size_t id_pool_size() const { return pool_.size(); }

 private:
  // Children of the next request: --class-mix drawn by weight, else
  // --orders-per-request.
  unsigned children(Rng& rng) const;
  Request make_order_request(Rng& rng, std::size_t account);
  Child random_order(Rng& rng) const;
  // A child of --ioc-ratio/--market-ratio/--replace-ratio's `type`; a replace takes an id of
  // the account's from the pool (learn() puts it back when the reply is <replaced>) and is
  // a plain order while the account has none.
  Child typed_order(Rng& rng, std::size_t account, OrderType type);
  Child next_order(Rng& rng, std::size_t account);
  Request make_create(Rng& rng);
  Request make_mixed(Rng& rng);
  Request make_query(Rng& rng);

  const BenchOptions& o_;
  std::string created_prefix_;
  IdPool pool_;
  std::atomic<std::uint64_t> next_new_account_{1};
  double class_weight_total_ = 0;
};

std::string format_price(std::int64_t scaled, unsigned decimals);
// A limit price uniform in 90..110 with `decimals` fractional digits (--price-decimals).
std::string random_limit(Rng& rng, unsigned decimals);

}  // namespace exch::bench
