#include "auth/key.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <stdexcept>

namespace auth {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

// The value of one lowercase hex digit; -1 for anything else (uppercase included: the file
// holds one spelling of each hash, so two spellings never name the same key).
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

KeyHash sha256(std::string_view key) {
  KeyHash hash{};
  unsigned int length = 0;
  if (EVP_Digest(key.data(), key.size(), hash.data(), &length, EVP_sha256(), nullptr) != 1 ||
      length != hash.size()) {
    throw std::runtime_error("SHA-256 failed (OpenSSL EVP_Digest)");
  }
  return hash;
}

std::string to_hex(const KeyHash& hash) {
  std::string text;
  text.reserve(hash.size() * 2);
  for (unsigned char byte : hash) {
    text += kHexDigits[byte >> 4];
    text += kHexDigits[byte & 0x0f];
  }
  return text;
}

std::optional<KeyHash> parse_hex(std::string_view text) {
  KeyHash hash{};
  if (text.size() != hash.size() * 2) return std::nullopt;
  for (std::size_t i = 0; i < hash.size(); ++i) {
    const int high = hex_value(text[2 * i]);
    const int low = hex_value(text[2 * i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    hash[i] = static_cast<unsigned char>(high << 4 | low);
  }
  return hash;
}

bool same_hash(const KeyHash& a, const KeyHash& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string random_key() {
  KeyHash bytes{};  // 32 random bytes: the same size as a hash, and printed the same way
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    throw std::runtime_error("no random bytes for a key (OpenSSL RAND_bytes failed)");
  }
  return to_hex(bytes);
}

}  // namespace auth
