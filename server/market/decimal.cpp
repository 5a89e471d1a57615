#include "market/decimal.hpp"

#include <cstdint>

#include "market/reject.hpp"

namespace market {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Shared by client and stored parsing; limits differ.
std::optional<Reason> parse_with_limits(std::string_view text, int max_int_digits,
                                        int max_frac_digits, Decimal& out) {
  if (text.empty()) return Reason::EmptyNumber;
  std::size_t i = 0;
  bool negative = false;
  if (text[0] == '+' || text[0] == '-') {
    negative = text[0] == '-';
    ++i;
  }
  std::string_view int_part, frac_part;
  std::size_t start = i;
  while (i < text.size() && is_digit(text[i])) ++i;
  int_part = text.substr(start, i - start);
  if (i < text.size() && text[i] == '.') {
    ++i;
    start = i;
    while (i < text.size() && is_digit(text[i])) ++i;
    frac_part = text.substr(start, i - start);
  }
  if (i != text.size() || (int_part.empty() && frac_part.empty())) return Reason::NotANumber;

  // Leading zeros of the integer part and trailing zeros of the fraction carry no value, so
  // they do not count against the limits (no rounding happens either way).
  while (!int_part.empty() && int_part.front() == '0') int_part.remove_prefix(1);
  while (!frac_part.empty() && frac_part.back() == '0') frac_part.remove_suffix(1);
  if (static_cast<int>(int_part.size()) > max_int_digits) return Reason::NumberTooLarge;
  if (static_cast<int>(frac_part.size()) > max_frac_digits) return Reason::NumberTooPrecise;

  Decimal::Raw raw = 0;
  for (char c : int_part) raw = raw * 10 + (c - '0');
  for (int d = 0; d < Decimal::kScaleDigits; ++d) {
    raw *= 10;
    if (d < static_cast<int>(frac_part.size())) raw += frac_part[d] - '0';
  }
  out = Decimal::from_raw(negative ? -raw : raw);
  return std::nullopt;
}

}  // namespace

std::optional<Reason> Decimal::parse(std::string_view text, Decimal& out) {
  return parse_with_limits(text, kMaxIntegerDigits, kMaxInputFractionDigits, out);
}

Decimal Decimal::parse_stored(std::string_view text) {
  Decimal out;
  // 25 integer digits keeps the scaled value below 2^127.
  if (parse_with_limits(text, 25, kScaleDigits, out))
    throw DecimalError("stored value '" + std::string(text) +
                       "' is not a decimal number of at most 25 integer and 12 fractional digits");
  return out;
}

std::string Decimal::to_string() const {
  const Raw v = raw_ < 0 ? -raw_ : raw_;
  // Split at the scale in 64-bit arithmetic whenever the value fits (below about 18 million,
  // which is nearly every price, amount and balance): a 128-bit division is a call into libgcc
  // per digit, and this runs for every number of every reply and projected row.
  unsigned __int128 int_part, frac;
  if (v <= static_cast<Raw>(UINT64_MAX)) {
    constexpr std::uint64_t kScale = 1000000000000ULL;  // 10^kScaleDigits
    static_assert(static_cast<Raw>(kScale) == scale());
    const auto small = static_cast<std::uint64_t>(v);
    int_part = small / kScale;
    frac = small % kScale;
  } else {
    int_part = static_cast<unsigned __int128>(v / scale());
    frac = static_cast<unsigned __int128>(v % scale());
  }
  // At most 39 integer digits (2^127), a sign, a point and kScaleDigits fractional digits.
  char buf[64];
  char* const end = buf + sizeof buf;
  char* p = end;
  if (frac != 0) {
    // The fraction fits in 64 bits (below 10^12) and keeps no trailing zeros.
    auto f = static_cast<std::uint64_t>(frac);
    int digits = kScaleDigits;
    while (f % 10 == 0) {
      f /= 10;
      --digits;
    }
    for (; digits > 0; --digits, f /= 10) *--p = static_cast<char>('0' + f % 10);
    *--p = '.';
  }
  if (int_part <= UINT64_MAX) {
    auto i = static_cast<std::uint64_t>(int_part);
    do *--p = static_cast<char>('0' + i % 10);
    while ((i /= 10) != 0);
  } else {
    do *--p = static_cast<char>('0' + static_cast<int>(int_part % 10));
    while ((int_part /= 10) != 0);
  }
  if (raw_ < 0) *--p = '-';
  return std::string(p, end);
}

}  // namespace market
