// The flags of `send` and `bench` that say how to reach the exchange beyond host and port:
// TLS (--tls, --ca, --cert, --key, --tls-resume) and the key logon (--principal,
// --api-key-file). Parsed once here for both commands.
#pragma once

#include <string>

#include <boost/program_options/options_description.hpp>

#include "net/connect_options.hpp"

namespace exch {

struct SecurityFlags {
  bool tls = false;
  std::string ca_file, cert_file, key_file;
  std::string tls_resume = "on";        // on | off
  std::string tls_max_version = "1.3";  // 1.3 | 1.2
  std::string principal;
  std::string api_key_file;
};

// The options, writing into `flags` (which must outlive the parse).
boost::program_options::options_description security_options(SecurityFlags& flags);

// A usage error (exit status 2) as a message, or empty when the flags go together.
std::string check_security_flags(const SecurityFlags& flags);

// Reads the API key and makes the TLS context. Throws std::runtime_error with a message for
// the user (exit status 1): an unreadable key file, a file OpenSSL cannot load (its reason).
net::ConnectOptions make_connect_options(const SecurityFlags& flags, net::Timeouts timeouts);

// The first line of `path`, whitespace trimmed: one word. Throws std::runtime_error naming the
// file (never the key).
std::string read_api_key_file(const std::string& path);

// For reports: "tls (resumption on), principal NAME", "plaintext"; never the key.
std::string describe_security(const SecurityFlags& flags);

}  // namespace exch
