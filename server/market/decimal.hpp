#pragma once
// Exact fixed-point decimal for money and shares. Never a double.
//
// Values are held as a 128-bit integer count of 10^-12 units. Input numbers (balances, amounts,
// prices) are limited to kMaxIntegerDigits integer digits and kMaxInputFractionDigits fractional
// digits, so the product of any two inputs (amount x limit, shares x price) is exact at 12
// fractional digits and cannot overflow. Every operation is checked anyway: an overflow throws
// DecimalError rather than wrapping.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace market {

enum class Reason : std::uint8_t;  // why a request is refused: market/reject.hpp

class DecimalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Decimal {
 public:
  using Raw = __int128;
  static constexpr int kScaleDigits = 12;            // internal fractional digits
  static constexpr int kMaxInputFractionDigits = 6;  // accepted from clients
  static constexpr int kMaxIntegerDigits = 12;       // accepted from clients

  constexpr Decimal() = default;
  static constexpr Decimal from_raw(Raw raw) { return Decimal(raw); }
  static Decimal from_int(std::int64_t v) { return Decimal(Raw(v) * scale()); }

  // Parses a client's number: optional sign, digits, optional fraction. Returns nothing on
  // success, otherwise why not: Reason::EmptyNumber, NotANumber, NumberTooLarge or
  // NumberTooPrecise (nothing is rounded or truncated). `out` is written only on success.
  static std::optional<Reason> parse(std::string_view text, Decimal& out);
  // Parses a number the database wrote (up to kScaleDigits fractional digits).
  static Decimal parse_stored(std::string_view text);

  Raw raw() const { return raw_; }
  bool is_zero() const { return raw_ == 0; }
  bool is_negative() const { return raw_ < 0; }
  bool is_positive() const { return raw_ > 0; }
  Decimal abs() const { return raw_ < 0 ? Decimal(-raw_) : *this; }

  // Canonical form: no exponent, no trailing fractional zeros, "-" for negatives.
  std::string to_string() const;

  friend Decimal operator+(Decimal a, Decimal b) {
    Raw r;
    if (__builtin_add_overflow(a.raw_, b.raw_, &r)) throw DecimalError("decimal overflow");
    return Decimal(r);
  }
  friend Decimal operator-(Decimal a, Decimal b) {
    Raw r;
    if (__builtin_sub_overflow(a.raw_, b.raw_, &r)) throw DecimalError("decimal overflow");
    return Decimal(r);
  }
  Decimal operator-() const { return Decimal(0) - *this; }
  Decimal& operator+=(Decimal o) { return *this = *this + o; }
  Decimal& operator-=(Decimal o) { return *this = *this - o; }

  // Exact product. Both operands must have at most 6 fractional digits (true of every client
  // input and of differences between them); anything else would need rounding and throws.
  friend Decimal operator*(Decimal a, Decimal b) {
    constexpr Raw half = 1000000;  // 10^(kScaleDigits / 2)
    if (a.raw_ % half != 0 || b.raw_ % half != 0)
      throw DecimalError("product needs more than 12 fractional digits");
    Raw r;
    if (__builtin_mul_overflow(a.raw_ / half, b.raw_ / half, &r))
      throw DecimalError("decimal overflow");
    return Decimal(r);
  }

  friend bool operator==(Decimal a, Decimal b) { return a.raw_ == b.raw_; }
  friend bool operator!=(Decimal a, Decimal b) { return a.raw_ != b.raw_; }
  friend bool operator<(Decimal a, Decimal b) { return a.raw_ < b.raw_; }
  friend bool operator>(Decimal a, Decimal b) { return a.raw_ > b.raw_; }
  friend bool operator<=(Decimal a, Decimal b) { return a.raw_ <= b.raw_; }
  friend bool operator>=(Decimal a, Decimal b) { return a.raw_ >= b.raw_; }

  static constexpr Raw scale() {
    Raw s = 1;
    for (int i = 0; i < kScaleDigits; ++i) s *= 10;
    return s;
  }

 private:
  constexpr explicit Decimal(Raw raw) : raw_(raw) {}
  Raw raw_ = 0;
};

inline Decimal min(Decimal a, Decimal b) { return a < b ? a : b; }

}  // namespace market
