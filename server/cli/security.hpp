#pragma once
// The exchange port's security flags, shared by exchange-server and exchange-floor: TLS
// (--tls-cert, --tls-key, --tls-client-ca), authentication (--principals, the logon throttle)
// and the open-bind rule: without --principals only a loopback --bind is served, unless
// --allow-unauthenticated says that is wanted (as Redis's protected mode does).
#include <memory>
#include <optional>
#include <string>

#include "auth/gate.hpp"
#include "net/tls_context.hpp"
#include "util/settings.hpp"

namespace cli {

struct SecurityFlags {
  net::TlsFiles tls;
  std::string principals;
  bool allow_unauthenticated = false;
  auth::LogonThrottle::Options throttle;  // --logon-max-failures, --logon-lockout-ms, ...
};

// What the flags built: null members are off.
struct Security {
  std::shared_ptr<auth::Gate> gate;
  std::shared_ptr<net::TlsContext> tls;
};

// --tls-cert, --tls-key, --tls-client-ca, --principals, --allow-unauthenticated, --logon-....
void declare_security_settings(util::Settings& settings, SecurityFlags& flags);

// Checks the flags against the listening address and loads the files. Returns the problem
// (for exit 2: a bad principals file names its line, a certificate its OpenSSL reason), or
// nullopt with `out` filled.
std::optional<std::string> load_security(const SecurityFlags& flags, const std::string& bind,
                                         Security& out);

// Whether `bind` serves only this machine (127.0.0.0/8 or localhost).
bool is_loopback_bind(const std::string& bind);

}  // namespace cli
