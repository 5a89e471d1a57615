#include "bench/reasons.hpp"

#include <algorithm>

namespace exch::bench {

namespace {
bool is_digit(char c) { return c >= '0' && c <= '9'; }
constexpr std::size_t kMaxReasonChars = 120;
}  // namespace

std::string reason_of(std::string_view text) {
  std::string out;
  out.reserve(std::min(text.size(), kMaxReasonChars) + 3);
  std::size_t i = 0;
  while (i < text.size() && out.size() < kMaxReasonChars) {
    char c = text[i];
    if (is_digit(c)) {
      while (i < text.size() && is_digit(text[i])) ++i;
      if (i + 1 < text.size() && text[i] == '.' && is_digit(text[i + 1])) {
        ++i;
        while (i < text.size() && is_digit(text[i])) ++i;
      }
      out += 'N';
      continue;
    }
    out += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? ' ' : c;
    ++i;
  }
  if (i < text.size()) out += "...";
  return out;
}

void ReasonTally::add(std::string_view error_text, std::uint64_t n) {
  total_ += n;
  std::string reason = reason_of(error_text);
  auto it = counts_.find(reason);
  if (it != counts_.end()) {
    it->second += n;
  } else if (counts_.size() < max_distinct_) {
    counts_.emplace(std::move(reason), n);
  } else {
    untold_ += n;
  }
}

void ReasonTally::merge(const ReasonTally& other) {
  for (const auto& [reason, n] : other.counts_) {
    total_ += n;
    auto it = counts_.find(reason);
    if (it != counts_.end())
      it->second += n;
    else if (counts_.size() < max_distinct_)
      counts_.emplace(reason, n);
    else
      untold_ += n;
  }
  total_ += other.untold_;
  untold_ += other.untold_;
}

std::vector<ReasonTally::Entry> ReasonTally::top(std::size_t n) const {
  std::vector<Entry> all;
  all.reserve(counts_.size());
  for (const auto& [reason, count] : counts_) all.push_back({reason, count});
  std::sort(all.begin(), all.end(), [](const Entry& a, const Entry& b) {
    return a.count != b.count ? a.count > b.count : a.reason < b.reason;
  });
  if (all.size() > n) all.resize(n);
  return all;
}

std::uint64_t ReasonTally::other(std::size_t n) const {
  std::uint64_t shown = 0;
  for (const Entry& e : top(n)) shown += e.count;
  return total_ - shown;
}

std::string describe_reasons(const ReasonTally& tally, std::size_t top) {
  std::string out;
  for (const auto& e : tally.top(top)) {
    if (!out.empty()) out += ", ";
    out += std::to_string(e.count) + " '" + e.reason + "'";
  }
  if (std::uint64_t rest = tally.other(top)) {
    if (!out.empty()) out += ", ";
    out += std::to_string(rest) + " other";
  }
  return out;
}

}  // namespace exch::bench
