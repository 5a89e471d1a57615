#include "connect_flags.hpp"

#include <cctype>
#include <fstream>
#include <stdexcept>

#include <boost/program_options.hpp>

#include "net/tls.hpp"

namespace po = boost::program_options;

namespace exch {

namespace {

bool one_word(const std::string& s) {
  if (s.empty()) return false;
  for (unsigned char c : s)
    if (std::isspace(c) || std::iscntrl(c)) return false;
  return true;
}

std::string trim(const std::string& s) {
  const char* space = " \t\r\n\f\v";
  auto first = s.find_first_not_of(space);
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(space) - first + 1);
}

}  // namespace

po::options_description security_options(SecurityFlags& f) {
  po::options_description d("TLS and logon");
  d.add_options()("tls", po::bool_switch(&f.tls),
                  "connect with TLS (1.2 or 1.3); the server's certificate must chain to --ca "
                  "(or to the system's trusted certificates) and name the host dialled")(
      "ca", po::value(&f.ca_file),
      "FILE, with --tls: PEM certificates of the authorities trusted for the server")(
      "cert", po::value(&f.cert_file),
      "FILE, with --tls: client certificate chain (PEM) for mutual TLS; needs --key")(
      "key", po::value(&f.key_file),
      "FILE, with --tls: the private key of --cert (PEM, not encrypted)")(
      "tls-resume", po::value(&f.tls_resume)->default_value(f.tls_resume),
      "on or off, with --tls: on offers each server a session it gave before (a resumed "
      "handshake skips the certificates; a TLS 1.3 ticket is used once); off: a full "
      "handshake on every connection")(
      "tls-max-version", po::value(&f.tls_max_version)->default_value(f.tls_max_version),
      "1.3 or 1.2, with --tls: the newest version offered. A resumed TLS 1.2 session skips "
      "the key exchange that TLS 1.3 resumption repeats, about twice the one-shot rate with "
      "OpenSSL 3.0 (docs/PERFORMANCE.md)")(
      "principal", po::value(&f.principal),
      "NAME: log on as NAME; the line \"EXCHANGE-LOGON 1 NAME KEY\" goes before each request (or "
      "session hello); needs --api-key-file")(
      "api-key-file", po::value(&f.api_key_file),
      "FILE whose first line is the API key of --principal (the key is never printed)");
  return d;
}

std::string check_security_flags(const SecurityFlags& f) {
  if (!f.tls && (!f.ca_file.empty() || !f.cert_file.empty() || !f.key_file.empty()))
    return "--ca, --cert and --key need --tls";
  if (f.cert_file.empty() != f.key_file.empty())
    return f.cert_file.empty() ? "--key needs --cert" : "--cert needs --key";
  if (f.tls_resume != "on" && f.tls_resume != "off") return "--tls-resume must be on or off";
  if (f.tls_max_version != "1.3" && f.tls_max_version != "1.2")
    return "--tls-max-version must be 1.3 or 1.2";
  if (f.principal.empty() != f.api_key_file.empty())
    return f.principal.empty() ? "--api-key-file needs --principal"
                               : "--principal needs --api-key-file";
  if (!f.principal.empty() && (!one_word(f.principal) || f.principal.size() > 128))
    return "--principal must be one word of at most 128 characters";
  return "";
}

std::string read_api_key_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read --api-key-file " + path);
  std::string line;
  std::getline(in, line);
  std::string key = trim(line);
  if (key.empty())
    throw std::runtime_error("--api-key-file " + path + ": no key on its first line");
  if (!one_word(key))
    throw std::runtime_error("--api-key-file " + path +
                             ": the key on its first line must be one word");
  return key;
}

net::ConnectOptions make_connect_options(const SecurityFlags& f, net::Timeouts timeouts) {
  net::ConnectOptions o(timeouts);
  if (!f.principal.empty()) {
    o.credentials.principal = f.principal;
    o.credentials.api_key = read_api_key_file(f.api_key_file);
  }
  if (f.tls) {
    net::TlsOptions tls;
    tls.enabled = true;
    tls.ca_file = f.ca_file;
    tls.cert_file = f.cert_file;
    tls.key_file = f.key_file;
    tls.resume = f.tls_resume != "off";
    tls.max_tls12 = f.tls_max_version == "1.2";
    o.tls = net::TlsClient::create(tls);
  }
  return o;
}

std::string describe_security(const SecurityFlags& f) {
  std::string out = !f.tls                       ? "plaintext"
                    : f.tls_max_version == "1.2" ? "tls 1.2 (resumption " + f.tls_resume + ")"
                                                 : "tls (resumption " + f.tls_resume + ")";
  if (!f.cert_file.empty()) out += " with a client certificate";
  if (!f.principal.empty()) out += ", principal " + f.principal;
  return out;
}

}  // namespace exch
