#include "cli/security.hpp"

#include <arpa/inet.h>

#include "util/log.hpp"

namespace cli {

void declare_security_settings(util::Settings& s, SecurityFlags& flags) {
  const std::string group = "Authentication and TLS";
  s.add("tls-cert", group, &flags.tls.cert)
      .no_default()
      .help(
          "PEM certificate chain: the exchange port speaks TLS (1.2 and 1.3 only), with the "
          "same framing inside; needs --tls-key");
  s.add("tls-key", group, &flags.tls.key).no_default().help("PEM private key of --tls-cert");
  s.add("tls-client-ca", group, &flags.tls.client_ca)
      .no_default()
      .help(
          "PEM CA certificates: clients are asked for a certificate signed by one of them; one "
          "that does not verify ends the handshake, and a verified one's subject CN is the "
          "principal (needs --tls-cert)");
  s.add("principals", group, &flags.principals)
      .no_default()
      .help(
          "turns authentication on: the principals file (name, roles, accounts, API key hash a "
          "line; docs/OPERATIONS.md). Every request needs a principal (a client certificate or "
          "a key logon) that may act for its account; <create> needs the admin role. Read "
          "again on SIGHUP (a bad file is refused whole, the last good one stays)");
  s.add("allow-unauthenticated", group, &flags.allow_unauthenticated)
      .help(
          "serve a non-loopback --bind without --principals (anyone who reaches the port may "
          "act for every account); without it such a start is refused");
  s.add("logon-max-failures", group, &flags.throttle.max_failures)
      .help(
          "failed key logons of one name from one address group (loopback is one group, IPv6 "
          "counts by /64) before that name's logons from there are refused for "
          "--logon-lockout-ms; 0: no throttle at all");
  s.add("logon-max-group-failures", group, &flags.throttle.max_group_failures)
      .help(
          "failed key logons of any names from one address group before every key logon from "
          "it is refused for --logon-lockout-ms (a success forgets only its own name's "
          "failures); 0: no limit per group");
  s.add("logon-lockout-ms", group, &flags.throttle.lockout)
      .at_least(1)
      .unit("ms")
      .help(
          "how long a name or group over its failure limit is refused, counted from its last "
          "failure; failures further apart never add up");
  s.add("logon-max-tracked", group, &flags.throttle.max_tracked)
      .at_least(1)
      .help(
          "names and address groups the throttle remembers; when all are within their lockout, "
          "a failure that finds no room counts by name alone (principals' names only), "
          "locking that name out where the table holds no record of it");
}

bool is_loopback_bind(const std::string& bind) {
  if (bind == "localhost") return true;
  in_addr addr{};
  return ::inet_pton(AF_INET, bind.c_str(), &addr) == 1 && (ntohl(addr.s_addr) >> 24) == 127;
}

std::optional<std::string> load_security(const SecurityFlags& flags, const std::string& bind,
                                         Security& out) {
  if (flags.tls.cert.empty() != flags.tls.key.empty())
    return "--tls-cert and --tls-key go together";
  if (!flags.tls.client_ca.empty() && flags.tls.cert.empty())
    return "--tls-client-ca needs --tls-cert and --tls-key";
  if (flags.principals.empty() && !is_loopback_bind(bind) && !flags.allow_unauthenticated)
    return "refusing to serve " + bind +
           " without authentication: anyone who reaches it could act for every account. Give "
           "--principals FILE, bind 127.0.0.1, or say --allow-unauthenticated";
  try {
    if (!flags.tls.cert.empty()) out.tls = std::make_shared<net::TlsContext>(flags.tls);
    if (!flags.principals.empty()) {
      out.gate =
          std::make_shared<auth::Gate>(auth::Gate::Options{flags.principals, flags.throttle});
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  if (!out.gate && !is_loopback_bind(bind))
    EXCHANGE_LOG(warn) << "serving " << bind
                       << " without authentication (--allow-unauthenticated): anyone who can "
                          "reach it can create accounts and trade for every account";
  if (out.gate)
    EXCHANGE_LOG(info) << "authentication on: " << out.gate->principals()->size()
                       << " principals from " << flags.principals
                       << (out.tls ? "" : "; without TLS, key logons only from loopback");
  return std::nullopt;
}

}  // namespace cli
