// market::Decimal: client parsing, canonical output, exact checked arithmetic.
#include "market/decimal.hpp"

#include <limits>
#include <optional>
#include <string>

#include <catch2/catch.hpp>

#include "market/reject.hpp"
#include "support/decimal.hpp"

using market::Decimal;
using market::DecimalError;
using market::Reason;
using testing_support::dec;

namespace {

// Why text is rejected (nothing when it was accepted); its wording is protocol_test's.
std::optional<Reason> rejection(const std::string& text) {
  Decimal d = Decimal::from_int(42);
  std::optional<Reason> why = Decimal::parse(text, d);
  // A rejected parse must not touch the output.
  if (why) CHECK(d == Decimal::from_int(42));
  return why;
}

constexpr Decimal::Raw kMaxRaw = std::numeric_limits<Decimal::Raw>::max();
constexpr Decimal::Raw kMinRaw = std::numeric_limits<Decimal::Raw>::min();

}  // namespace

TEST_CASE("parse: integers", "[decimal][parse]") {
  CHECK(dec("0").raw() == 0);
  CHECK(dec("1").raw() == Decimal::scale());
  CHECK(dec("125") == Decimal::from_int(125));
  CHECK(dec("1000000") == Decimal::from_int(1000000));
  CHECK(dec("999999999999").raw() == Decimal::Raw(999999999999) * Decimal::scale());
  CHECK(dec("125").to_string() == "125");
}

TEST_CASE("parse: fractions are exact", "[decimal][parse]") {
  CHECK(dec("0.5").raw() == Decimal::scale() / 2);
  CHECK(dec("12.25").raw() == Decimal::Raw(12250000000000));
  CHECK(dec("0.000001").raw() == Decimal::Raw(1000000));  // 10^-6 is 10^6 internal units
  CHECK(dec("0.1").raw() == Decimal::Raw(100000000000));
  CHECK(dec("123456.789012").raw() == Decimal::Raw(123456789012) * 1000000);
  CHECK(dec("999999999999.999999").to_string() == "999999999999.999999");
}

TEST_CASE("parse: leading and trailing zeros", "[decimal][parse]") {
  CHECK(dec("007") == Decimal::from_int(7));
  CHECK(dec("0007.50") == dec("7.5"));
  CHECK(dec("000") == Decimal());
  CHECK(dec("0.0") == Decimal());
  // Leading zeros do not count as integer digits.
  CHECK(dec("0000000000001") == Decimal::from_int(1));
  CHECK(dec("00000000000000000000999999999999") == dec("999999999999"));
  // Trailing fractional zeros carry no value and do not count against the 6-digit limit.
  CHECK(dec("1.0000000") == Decimal::from_int(1));
  CHECK(dec("1.500000000000000000") == dec("1.5"));
  CHECK(dec("0.000001000") == dec("0.000001"));
}

TEST_CASE("parse: signs", "[decimal][parse]") {
  CHECK(dec("+5") == Decimal::from_int(5));
  CHECK(dec("-5") == Decimal::from_int(-5));
  CHECK(dec("-5").is_negative());
  CHECK(dec("-0.25").raw() == -Decimal::scale() / 4);
  CHECK(dec("+010.50") == dec("10.5"));
  CHECK(dec("-0").is_zero());
  CHECK_FALSE(dec("-0").is_negative());
  CHECK(dec("-.5") == dec("-0.5"));
  CHECK(dec("+.5") == dec("0.5"));
}

TEST_CASE("parse: '.5' and '5.'", "[decimal][parse]") {
  CHECK(dec(".5") == dec("0.5"));
  CHECK(dec("5.") == Decimal::from_int(5));
  CHECK(dec(".000001").raw() == 1000000);
}

TEST_CASE("parse: rejects non-numbers", "[decimal][parse]") {
  for (const char* bad :
       {"",     "abc",   "1e5", "1E5", "NaN",  "nan", "inf", "-inf", "Infinity", " 1",
        "1 ",   "\t1",   "1\n", ".",   "+",    "-",   "+-1", "--1",  "1.2.3",    "1,5",
        "0x10", "1_000", "5.a", "a5",  "1..2", "..5", "+ 1", "١"}) {
    INFO("input '" << bad << "'");
    CHECK(rejection(bad).has_value());
  }
  CHECK(rejection("") == Reason::EmptyNumber);
  CHECK(rejection("abc") == Reason::NotANumber);
  CHECK(rejection("1e5") == Reason::NotANumber);
}

TEST_CASE("parse: at most 6 fractional digits, never rounded", "[decimal][parse]") {
  CHECK_FALSE(rejection("1.000001").has_value());
  CHECK(rejection("1.0000001") == Reason::NumberTooPrecise);
  CHECK(rejection("0.1234567") == Reason::NumberTooPrecise);
  CHECK(rejection("0.0000005") == Reason::NumberTooPrecise);
  CHECK(rejection("-0.0000001") == Reason::NumberTooPrecise);
  // Trailing zeros after the 7th digit do not rescue a significant 7th digit.
  CHECK(rejection("1.00000010") == Reason::NumberTooPrecise);
}

TEST_CASE("parse: at most 12 integer digits", "[decimal][parse]") {
  CHECK_FALSE(rejection("999999999999").has_value());
  CHECK_FALSE(rejection("-999999999999").has_value());
  CHECK(rejection("1000000000000") == Reason::NumberTooLarge);  // 13 digits
  CHECK(rejection("-1000000000000") == Reason::NumberTooLarge);
  CHECK(rejection("1234567890123.5") == Reason::NumberTooLarge);
  CHECK(rejection(std::string(40, '9')) == Reason::NumberTooLarge);
}

TEST_CASE("parse_stored accepts 12 fractional digits and large values", "[decimal][parse]") {
  CHECK(Decimal::parse_stored("0.000000000001").raw() == 1);
  CHECK(Decimal::parse_stored("123.456000000000") == dec("123.456"));
  CHECK(Decimal::parse_stored("-7") == Decimal::from_int(-7));
  CHECK(Decimal::parse_stored("1000000000000000000000000").to_string() ==
        "1000000000000000000000000");
  CHECK_THROWS_AS(Decimal::parse_stored("0.0000000000001"), DecimalError);
  CHECK_THROWS_AS(Decimal::parse_stored("abc"), DecimalError);
  CHECK_THROWS_AS(Decimal::parse_stored(""), DecimalError);
  CHECK_THROWS_AS(Decimal::parse_stored(std::string(26, '9')), DecimalError);
}

// to_string splits at the scale in 64-bit arithmetic while the raw value fits in 64 bits
// (below about 18.4 million) and in 128-bit arithmetic above: both sides of that edge, and the
// largest values, must print exactly and read back to the same value.
TEST_CASE("to_string is exact on both sides of its 64-bit fast path", "[decimal][format]") {
  // 2^64 - 1 raw units is 18446744.073709551615.
  CHECK(Decimal::from_raw(Decimal::Raw(UINT64_MAX)).to_string() == "18446744.073709551615");
  CHECK(Decimal::from_raw(Decimal::Raw(UINT64_MAX) + 1).to_string() == "18446744.073709551616");
  CHECK(Decimal::from_raw(-Decimal::Raw(UINT64_MAX) - 1).to_string() == "-18446744.073709551616");
  CHECK(dec("18446744").to_string() == "18446744");
  CHECK(dec("18446745").to_string() == "18446745");
  CHECK(dec("-999999999999.000001").to_string() == "-999999999999.000001");
  CHECK(dec("123456789012.05").to_string() == "123456789012.05");
  CHECK(Decimal::parse_stored("9999999999999999999999999.999999999999").to_string() ==
        "9999999999999999999999999.999999999999");
  CHECK(Decimal::parse_stored("-9999999999999999999999999.000000000001").to_string() ==
        "-9999999999999999999999999.000000000001");
  for (const char* text : {"0.05", "1.000001", "18446743.999999", "18446744.5", "7000000000",
                           "0.000000000001", "-0.1", "5000000000000000000000"}) {
    const Decimal d = Decimal::parse_stored(text);
    CHECK(d.to_string() == text);
    CHECK(Decimal::parse_stored(d.to_string()) == d);
  }
}

TEST_CASE("to_string is canonical", "[decimal][format]") {
  CHECK(Decimal::from_int(125).to_string() == "125");
  CHECK(dec("0.5").to_string() == "0.5");
  CHECK(dec("12.25").to_string() == "12.25");
  CHECK(dec("12.250000").to_string() == "12.25");
  CHECK(Decimal::from_int(-3).to_string() == "-3");
  CHECK(Decimal().to_string() == "0");
  CHECK(dec("-0").to_string() == "0");
  CHECK(dec("0.000").to_string() == "0");
  CHECK(dec("-0.5").to_string() == "-0.5");
  CHECK(dec("100").to_string() == "100");
  CHECK(dec("1000000000").to_string() == "1000000000");
  CHECK(dec("0.000001").to_string() == "0.000001");
  CHECK(dec("-0.000001").to_string() == "-0.000001");
  CHECK(dec("+010.50").to_string() == "10.5");
  CHECK(dec("10.05").to_string() == "10.05");
  CHECK(Decimal::from_raw(1).to_string() == "0.000000000001");
  CHECK(Decimal::from_raw(-1).to_string() == "-0.000000000001");
  CHECK(Decimal::from_raw(Decimal::scale() + 10).to_string() == "1.00000000001");
}

TEST_CASE("to_string round-trips through parse", "[decimal][format]") {
  for (const char* text : {"0", "1", "-1", "0.5", "12.25", "999999999999.999999",
                           "-999999999999.999999", "0.000001", "100.1", "3.14159"}) {
    INFO(text);
    CHECK(dec(text).to_string() == text);
    CHECK(dec(dec(text).to_string()) == dec(text));
  }
}

TEST_CASE("addition and subtraction are exact", "[decimal][arith]") {
  CHECK(dec("0.1") + dec("0.2") == dec("0.3"));
  CHECK((dec("0.1") + dec("0.2")).to_string() == "0.3");
  CHECK(dec("0.3") - dec("0.1") == dec("0.2"));
  CHECK(dec("1") - dec("0.000001") == dec("0.999999"));
  CHECK((dec("0") - dec("5.5")).to_string() == "-5.5");
  CHECK(-dec("5.5") == dec("-5.5"));
  CHECK(-dec("-5.5") == dec("5.5"));

  Decimal sum;
  for (int i = 0; i < 10; ++i) sum += dec("0.1");
  CHECK(sum == Decimal::from_int(1));
  for (int i = 0; i < 10; ++i) sum -= dec("0.1");
  CHECK(sum.is_zero());

  CHECK(dec("999999999999.999999") + dec("0.000001") == Decimal::from_int(1000000000000));
  CHECK((dec("999999999999.999999") + dec("999999999999.999999")).to_string() ==
        "1999999999999.999998");
}

TEST_CASE("multiplication is exact", "[decimal][arith]") {
  CHECK((dec("123456.789012") * dec("999999.999999")).to_string() == "123456789011.876543210988");
  CHECK((dec("999999999999.999999") * dec("999999999999.999999")).to_string() ==
        "999999999999999998000000.000000000001");
  CHECK((dec("0.000001") * dec("0.000001")).to_string() == "0.000000000001");
  CHECK((dec("-0.000001") * dec("0.000001")).to_string() == "-0.000000000001");
  CHECK(dec("300") * dec("125") == Decimal::from_int(37500));
  CHECK(dec("1.5") * dec("1.5") == dec("2.25"));
  CHECK(dec("-2") * dec("-3") == Decimal::from_int(6));
  CHECK(dec("-2") * dec("3") == Decimal::from_int(-6));
  CHECK((dec("0.1") * dec("0.2")).to_string() == "0.02");
  CHECK((dec("0") * dec("12.5")).is_zero());
}

TEST_CASE("overflow and inexact products throw", "[decimal][arith]") {
  Decimal max = Decimal::from_raw(kMaxRaw);
  Decimal min = Decimal::from_raw(kMinRaw);
  CHECK_THROWS_AS(max + Decimal::from_raw(1), DecimalError);
  CHECK_THROWS_AS(min - Decimal::from_raw(1), DecimalError);
  CHECK_THROWS_AS(min + Decimal::from_raw(-1), DecimalError);
  CHECK_THROWS_AS(-min, DecimalError);
  Decimal acc = max;
  CHECK_THROWS_AS(acc += Decimal::from_raw(1), DecimalError);
  CHECK(acc == max);  // unchanged on failure
  CHECK_THROWS_AS(acc -= Decimal::from_raw(-1), DecimalError);
  CHECK_NOTHROW(max - Decimal::from_raw(1));

  // 10^24 * 10^24 = 10^48 does not fit in 128 bits.
  Decimal big = Decimal::parse_stored("1000000000000000000000000");
  CHECK_THROWS_AS(big * big, DecimalError);
  CHECK_THROWS_AS(big * -big, DecimalError);

  // A factor with more than 6 fractional digits would need more than 12 in the product.
  CHECK_THROWS_AS(Decimal::from_raw(1) * Decimal::from_int(1), DecimalError);
  CHECK_THROWS_AS(Decimal::from_int(1) * Decimal::parse_stored("0.0000001"), DecimalError);
  CHECK_NOTHROW(Decimal::from_int(1) * Decimal::parse_stored("0.000001"));
}

TEST_CASE("comparisons and predicates", "[decimal][compare]") {
  CHECK(dec("1") < dec("1.000001"));
  CHECK(dec("1.000001") > dec("1"));
  CHECK(dec("-1") < dec("0"));
  CHECK(dec("-2") < dec("-1.5"));
  CHECK(dec("2.50") == dec("2.5"));
  CHECK(dec("2.50") <= dec("2.5"));
  CHECK(dec("2.50") >= dec("2.5"));
  CHECK(dec("2.5") != dec("2.500001"));
  CHECK_FALSE(dec("2.5") != dec("2.500000"));
  CHECK_FALSE(dec("3") < dec("3"));
  CHECK_FALSE(dec("3") > dec("3"));
  CHECK(dec("0.1") < dec("0.11"));
  CHECK(dec("999999999999") > dec("99999999999.999999"));

  CHECK(dec("0").is_zero());
  CHECK_FALSE(dec("0").is_positive());
  CHECK_FALSE(dec("0").is_negative());
  CHECK(dec("0.000001").is_positive());
  CHECK(dec("-0.000001").is_negative());
  CHECK(dec("-4.5").abs() == dec("4.5"));
  CHECK(dec("4.5").abs() == dec("4.5"));
  CHECK(market::min(dec("1"), dec("2")) == dec("1"));
  CHECK(market::min(dec("2"), dec("-2")) == dec("-2"));
  CHECK(Decimal() == Decimal::from_int(0));
}
