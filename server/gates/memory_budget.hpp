#pragma once
// The process's memory budget (issue 20): while the server's resident memory is over
// --max-memory-bytes, requests that could make it hold more (new accounts, positions, orders)
// are refused as a whole, before anything is parsed into the engine or journaled, instead of
// growing until the kernel kills the process. Queries and cancels still run, so clients can
// see and shrink what they hold. The other limits (open orders, accounts, symbols, buffers,
// queues) keep a well-behaved server below it; this is the backstop.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace app {

class MemoryBudget {
 public:
  // `limit_bytes` 0: no budget.
  explicit MemoryBudget(std::size_t limit_bytes) : limit_(limit_bytes) {}

  // Whether resident memory is over the budget now (read at most every kRefresh; lock-free).
  bool over();
  // Resident memory as last read, in bytes.
  std::size_t resident();
  std::size_t limit() const { return limit_; }
  // A request was refused for it.
  void refused() { refused_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t refusals() const { return refused_.load(std::memory_order_relaxed); }

  // The resident set of this process, from /proc/self/statm (0 if it cannot be read).
  static std::size_t read_resident();

 private:
  static constexpr std::chrono::milliseconds kRefresh{50};
  void refresh();

  const std::size_t limit_;
  std::atomic<std::size_t> resident_{0};
  std::atomic<std::int64_t> read_at_ns_{0};  // steady clock; 0: never read
  std::atomic<std::uint64_t> refused_{0};
};

}  // namespace app
