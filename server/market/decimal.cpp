#include "market/decimal.hpp"

#include <algorithm>

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
  Raw v = raw_ < 0 ? -raw_ : raw_;
  Raw int_part = v / scale();
  Raw frac = v % scale();
  std::string digits;
  do {
    digits.push_back(static_cast<char>('0' + static_cast<int>(int_part % 10)));
    int_part /= 10;
  } while (int_part != 0);
  if (raw_ < 0) digits.push_back('-');
  std::reverse(digits.begin(), digits.end());
  if (frac != 0) {
    char buf[kScaleDigits];
    for (int d = kScaleDigits - 1; d >= 0; --d) {
      buf[d] = static_cast<char>('0' + static_cast<int>(frac % 10));
      frac /= 10;
    }
    int len = kScaleDigits;
    while (buf[len - 1] == '0') --len;
    digits.push_back('.');
    digits.append(buf, len);
  }
  return digits;
}

}  // namespace market
