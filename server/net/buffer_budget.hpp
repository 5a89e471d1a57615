#pragma once
// The bytes every client connection of the process buffers, counted against one limit
// (--max-buffered-bytes): input of requests still being received, requests with the handler,
// and replies not yet written. Each connection's limits (--max-request-bytes, the unsent-reply
// bound) hold one connection to a few MiB, but --max-connections of them could still hold
// gigabytes; this is the bound across all of them. One instance, shared by every connection of
// either driver; net::Session decides what to charge and when (session.hpp), this only counts.
// Thread-safe and lock-free: sessions on any thread charge and release at once.
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace net {

// --max-buffered-bytes by default, 256 MiB: room for 256 requests of the largest size
// (--max-request-bytes, 1 MiB) being received at once, or 64 of the largest replies
// (--max-reply-bytes, 4 MiB) unread, which honest clients never come near (they hold a few
// KiB each, and up to 16 KiB of input per connection is taken without asking the budget); yet
// it caps what 4096 connections could otherwise hold (over 4 GiB of partial requests alone)
// at what a small server can spare.
inline constexpr std::size_t kDefaultMaxBufferedBytes = std::size_t{256} << 20;

class BufferBudget {
 public:
  explicit BufferBudget(std::size_t limit) : limit_(limit) {}
  BufferBudget(const BufferBudget&) = delete;
  BufferBudget& operator=(const BufferBudget&) = delete;

  // Takes `bytes` if the total stays within the limit; otherwise takes nothing and says so.
  bool try_charge(std::size_t bytes);
  // Takes `bytes` whatever the total: for bytes the server holds anyway (a reply to a request
  // that may already be journaled must not be dropped), which may take it past the limit.
  void charge(std::size_t bytes) { used_.fetch_add(bytes, std::memory_order_relaxed); }
  // Gives back bytes charged before (never more than were charged).
  void release(std::size_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }

  std::size_t used() const { return used_.load(std::memory_order_relaxed); }
  std::size_t limit() const { return limit_; }
  // Nothing more fits: sessions then take only what must not wait (session.hpp).
  bool exhausted() const { return used() >= limit_; }

  // A connection was told "Server busy" and closed because the budget was exhausted.
  void count_refusal() { refusals_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t refusals() const { return refusals_.load(std::memory_order_relaxed); }

 private:
  const std::size_t limit_;
  std::atomic<std::size_t> used_{0};
  std::atomic<std::uint64_t> refusals_{0};
};

}  // namespace net
