#include "net/openssl_error.hpp"

#include <openssl/err.h>

#include <cstring>

namespace exch::net {

namespace {

std::string reason_of(unsigned long e) {
  if (ERR_SYSTEM_ERROR(e)) return std::strerror(ERR_GET_REASON(e));
  if (const char* r = ERR_reason_error_string(e)) return r;
  char buffer[256];
  ERR_error_string_n(e, buffer, sizeof buffer);
  return buffer;
}

}  // namespace

std::string openssl_reason(const std::string& fallback) {
  // The earliest error is the cause ("No such file or directory"); the later ones are the
  // layers it went through ("system lib").
  unsigned long first = ERR_get_error();
  ERR_clear_error();
  return first == 0 ? fallback : reason_of(first);
}

}  // namespace exch::net
