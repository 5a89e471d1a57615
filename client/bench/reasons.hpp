// Counts of <error> texts by reason, for the report: "rejected 227: 180 'Order has
// nothing open to cancel', 47 'Insufficient shares: ...'".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace exch::bench {

// The reason of an <error> text: the text with every number (digits, with an
// optional fraction) replaced by "N", so that "order needs 5000, balance is 300"
// and "order needs 70, balance is 12" are one reason; control characters become
// spaces, and a text over 120 characters is cut (ending in "...").
std::string reason_of(std::string_view error_text);

class ReasonTally {
 public:
  struct Entry {
    std::string reason;
    std::uint64_t count = 0;
  };

  // At most `max_distinct` reasons are told apart; texts of further reasons
  // count towards "other" only (a server quoting unbounded text cannot make the
  // tally grow without bound).
  explicit ReasonTally(std::size_t max_distinct = 1000) : max_distinct_(max_distinct) {}

  void add(std::string_view error_text, std::uint64_t n = 1);
  void merge(const ReasonTally& other);

  std::uint64_t total() const { return total_; }
  std::size_t distinct() const { return counts_.size(); }
  // The `top` most frequent reasons, most frequent first (ties alphabetical).
  std::vector<Entry> top(std::size_t n) const;
  // What top(n) leaves out: total() minus the counts of top(n).
  std::uint64_t other(std::size_t n) const;

 private:
  std::size_t max_distinct_;
  std::unordered_map<std::string, std::uint64_t> counts_;
  std::uint64_t untold_ = 0;  // texts of reasons beyond max_distinct_
  std::uint64_t total_ = 0;
};

// "180 'Order has nothing open to cancel', 47 'Unknown symbol', 3 other": the
// `top` most frequent reasons and the rest as "other"; "" when empty.
std::string describe_reasons(const ReasonTally& tally, std::size_t top = 5);

}  // namespace exch::bench
