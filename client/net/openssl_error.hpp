// OpenSSL's error queue as text for messages.
#pragma once

#include <string>

namespace exch::net {

// Drains this thread's OpenSSL error queue and returns the reason of its earliest error, the
// cause ("No such file or directory", "no start line"), or `fallback` when it was empty.
std::string openssl_reason(const std::string& fallback = "unknown OpenSSL error");

}  // namespace exch::net
