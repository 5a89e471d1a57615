#pragma once
// API keys as the principals file holds them: the SHA-256 of the key, never the key. Compared
// in constant time (OpenSSL's CRYPTO_memcmp), so a wrong key's timing does not tell how much of
// its hash matched.
#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace auth {

using KeyHash = std::array<unsigned char, 32>;

// SHA-256 of the key's bytes (OpenSSL).
KeyHash sha256(std::string_view key);
// Lowercase hex, 64 characters.
std::string to_hex(const KeyHash& hash);
// The hash written as 64 lowercase hex digits; nullopt for anything else.
std::optional<KeyHash> parse_hex(std::string_view text);
// Whether the two hashes are equal, in time that does not depend on where they differ.
bool same_hash(const KeyHash& a, const KeyHash& b);
// A new random key (32 bytes of RAND_bytes as 64 hex digits), for `exchange-client keygen`.
std::string random_key();

}  // namespace auth
