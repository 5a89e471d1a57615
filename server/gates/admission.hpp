#pragma once
// Admission: the limits that keep what one request costs, and what clients can make the
// exchange hold, bounded. Each is a setting (gates/settings.cpp) and is checked before the child it
// refuses is applied, so nothing over a limit is ever journaled or projected.
//
// A refusal depends on the state (how many accounts exist, what rests on a book) and on flags
// an operator may change between runs, so a replay cannot re-derive it: the live run records
// which children it refused (Admission::refused(), journaled with the request) and a replay
// refuses exactly those. The replay then follows the live run whatever the flags are now.
#include <cstddef>
#include <optional>
#include <string>
#include <unordered_set>

#include "market/decimal.hpp"
#include "market/engine.hpp"
#include "market/reject.hpp"
#include "protocol/reply_bound.hpp"

namespace app {

struct Limits {
  std::size_t max_accounts = 1000000;
  std::size_t max_symbols = 10000;
  std::size_t max_open_orders = 2000000;
  std::size_t max_open_orders_per_account = 10000;
  // Executions one request may cause: bounds the time it holds the engine and the rows its
  // projection writes.
  std::size_t max_executions_per_request = 10000;
  // A reply may be this many times its request's bytes (but always kReplyAllowance), and never
  // more than max_reply_bytes.
  std::size_t max_reply_ratio = 64;
  std::size_t max_reply_bytes = 4 << 20;
  static constexpr std::size_t kReplyAllowance = 64 * 1024;
  protocol::ReplyBound reply_bound() const {
    return {max_reply_ratio, kReplyAllowance, max_reply_bytes};
  }
};

class Admission {
 public:
  // A live request of `request_bytes` bytes, under `limits`.
  static Admission live(const Limits& limits, std::size_t request_bytes);
  // A journal replay: refuses the children listed in `refused` (what refused() returned in the
  // live run) and nothing else. Throws std::invalid_argument when the list is malformed.
  static Admission replay(const std::string& refused);

  // Each check is for the child at `index` (its position in Command::creates or
  // Command::transactions) and returns why it is refused (with the limit it reached), or
  // nothing. A replay refuses with Reason::RefusedByLiveRun.
  std::optional<market::Reject> create_account(std::size_t index, const market::Engine& engine,
                                               const std::string& account);
  std::optional<market::Reject> add_shares(std::size_t index, const market::Engine& engine,
                                           const std::string& symbol);
  // Refuses an order that would rest (a GTC that does not fill, a stop) past the open-order
  // limits, or that would by itself execute more than the request has left (the engine, given
  // execution_budget(), also counts the stops it triggers and what a market buy can pay).
  std::optional<market::Reject> place_order(std::size_t index, const market::Engine& engine,
                                            const std::string& account, const std::string& symbol,
                                            const market::OrderTerms& terms);
  // A <replace>: only a replay's verdict; the engine keeps it within execution_budget().
  std::optional<market::Reject> replace(std::size_t index);
  // The executions the request has left for the engine (a replay: no limit).
  std::size_t execution_budget() const;
  // The engine applied a child that caused `executions` executions.
  void spent(std::size_t executions);
  // The engine refused the child at `index`: a refusal over execution_budget() is a limit's,
  // noted like the others (with the limit its text names); any other is the state's.
  market::Reject engine_refused(std::size_t index, market::Reject why);
  // A <status> or <canceled> with `fills` executions: counts its bytes against the reply's
  // budget. For a cancel, call it before cancelling.
  std::optional<market::Reject> reply_status(std::size_t index, std::size_t fills);

  // The refused children, "3,17" (empty when none): what the journal keeps for a replay.
  const std::string& refused() const { return refused_list_; }

  // The bytes a <status> or <canceled> counts for: an upper bound of what render() writes.
  static std::size_t status_bytes(std::size_t fills);

 private:
  // A refusal for the execution budget, which then has nothing left for the request.
  market::Reject over_budget(std::size_t index);
  // Notes the live refusal of the child at `index` (for refused()) and returns it.
  market::Reject refuse(std::size_t index, market::Reason reason, std::size_t limit);
  // In a replay: the live run's verdict on the child at `index`.
  std::optional<market::Reject> as_live_run(std::size_t index) const;

  bool replaying_ = false;
  std::unordered_set<std::size_t> replay_refused_;
  Limits limits_;
  std::size_t executions_left_ = 0;
  std::size_t reply_bytes_left_ = 0;
  std::string refused_list_;
};

}  // namespace app
