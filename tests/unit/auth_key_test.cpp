// API keys (auth/key.hpp): the SHA-256 the principals file holds, its one hex spelling, the
// constant-time comparison and the keys `exchange-client keygen` makes.
#include <string>

#include <catch2/catch.hpp>

#include "auth/key.hpp"

using auth::KeyHash;

namespace {

constexpr const char* kTestHash =
    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

bool is_lower_hex(const std::string& text) {
  return text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

TEST_CASE("sha256 matches the known digest of \"test\"", "[unit][auth]") {
  CHECK(auth::to_hex(auth::sha256("test")) == kTestHash);
  // And of the empty key, which is hashed like any other.
  CHECK(auth::to_hex(auth::sha256("")) ==
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_CASE("to_hex and parse_hex round trip", "[unit][auth]") {
  const KeyHash hash = auth::sha256("some key");
  const std::string hex = auth::to_hex(hash);
  CHECK(hex.size() == 64);
  CHECK(is_lower_hex(hex));
  const auto back = auth::parse_hex(hex);
  REQUIRE(back.has_value());
  CHECK(*back == hash);

  const auto known = auth::parse_hex(kTestHash);
  REQUIRE(known.has_value());
  CHECK(*known == auth::sha256("test"));
}

TEST_CASE("parse_hex refuses anything but 64 lowercase hex digits", "[unit][auth]") {
  const std::string good = kTestHash;
  CHECK(auth::parse_hex(good).has_value());
  CHECK_FALSE(auth::parse_hex(good.substr(0, 63)).has_value());
  CHECK_FALSE(auth::parse_hex(good + "0").has_value());
  CHECK_FALSE(auth::parse_hex("").has_value());

  std::string upper = good;
  upper[0] = 'F';  // 'f' in uppercase
  CHECK_FALSE(auth::parse_hex(upper).has_value());

  for (char bad : {'g', 'G', 'x', ' ', '-', '\0'}) {
    std::string text = good;
    text[40] = bad;
    CAPTURE(static_cast<int>(bad));
    CHECK_FALSE(auth::parse_hex(text).has_value());
  }
}

TEST_CASE("same_hash tells equal hashes from different ones", "[unit][auth]") {
  const KeyHash a = auth::sha256("a");
  KeyHash b = a;
  CHECK(auth::same_hash(a, b));
  b[31] ^= 1;  // differ in the last byte only
  CHECK_FALSE(auth::same_hash(a, b));
  b = a;
  b[0] ^= 0x80;  // and in the first
  CHECK_FALSE(auth::same_hash(a, b));
  CHECK_FALSE(auth::same_hash(auth::sha256("a"), auth::sha256("b")));
}

TEST_CASE("random_key makes 64 hex digits, a new key each time", "[unit][auth]") {
  const std::string one = auth::random_key();
  const std::string two = auth::random_key();
  CHECK(one.size() == 64);
  CHECK(is_lower_hex(one));
  CHECK(auth::parse_hex(one).has_value());
  CHECK(two.size() == 64);
  CHECK(one != two);
}
