#pragma once

#include <string>
#include <string_view>

namespace exch {

// `exchange-client keygen NAME [--roles R] [--accounts A] [--key-out FILE]`; argv[0] is
// "keygen". Prints a new API key and the principals-file line holding its hash. Returns the
// exit code.
int run_keygen(int argc, const char* const* argv);

// 32 bytes of RAND_bytes as 64 lowercase hex digits; throws std::runtime_error on failure.
std::string random_api_key();

// SHA-256 of `text`'s bytes as 64 lowercase hex digits (what the principals file holds).
std::string sha256_hex(std::string_view text);

}  // namespace exch
