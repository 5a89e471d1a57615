// exchange-client keygen: a new API key for a principal, and its line for the server's
// principals file (server/auth/principals.hpp: NAME ROLES ACCOUNTS SHA256-OF-THE-KEY).
#include "keygen.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <vector>

#include <boost/program_options.hpp>

namespace po = boost::program_options;

namespace exch {

namespace {

std::string to_hex(const unsigned char* bytes, std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
  }
  return out;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == ',')
      out.emplace_back();
    else
      out.back().push_back(c);
  }
  return out;
}

// A usage error as a message, or empty: the fields must parse as the server parses them.
std::string check_fields(const std::string& name, const std::string& roles,
                         const std::string& accounts) {
  // The server's rule for a principal's name (server/auth/principals.cpp).
  const char* kNameCharacters =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._@-";
  if (name.empty() || name.size() > 128 || name.find_first_not_of(kNameCharacters) != name.npos)
    return "NAME must be 1 to 128 characters of letters, digits and . _ @ -";
  for (const std::string& r : split_commas(roles))
    if (r != "trade" && r != "admin") return "--roles must be trade, admin or trade,admin";
  if (accounts == "*" || accounts == "-") return "";
  for (const std::string& a : split_commas(accounts))
    if (a.empty() || a.size() > 32 || a.find_first_not_of("0123456789") != std::string::npos)
      return "--accounts must be *, - or account ids (digits) separated by commas";
  return "";
}

// Writes the key to a new file only its owner may read; throws std::runtime_error.
void write_key_file(const std::string& path, const std::string& key) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    int err = errno;
    throw std::runtime_error("cannot create --key-out " + path + ": " + std::strerror(err) +
                             (err == EEXIST ? " (an existing key is never overwritten)" : ""));
  }
  const std::string text = key + "\n";
  bool ok = ::fchmod(fd, 0600) == 0 &&
            ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  int err = errno;
  ok = ::close(fd) == 0 && ok;
  if (!ok) throw std::runtime_error("cannot write --key-out " + path + ": " + std::strerror(err));
}

}  // namespace

std::string random_api_key() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1)
    throw std::runtime_error("no random bytes from OpenSSL (RAND_bytes failed)");
  return to_hex(bytes, sizeof bytes);
}

std::string sha256_hex(std::string_view text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &length, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("SHA-256 failed in OpenSSL");
  return to_hex(digest, length);
}

int run_keygen(int argc, const char* const* argv) {
  std::string name, roles = "trade", accounts = "-", key_out;
  po::options_description d("exchange-client keygen NAME [options]");
  d.add_options()("roles", po::value(&roles)->default_value(roles),
                  "the principal's roles: trade, admin or trade,admin")(
      "accounts", po::value(&accounts)->default_value(accounts),
      "accounts it may trade for: ids separated by commas, * (all) or - (none)")(
      "key-out", po::value(&key_out),
      "FILE: write the key to FILE (a new file, mode 0600) instead of printing it")("help,h",
                                                                                    "this help");
  po::options_description all;
  all.add(d).add_options()("name", po::value(&name));
  po::positional_options_description positional;
  positional.add("name", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    std::cerr << "exchange-client keygen: " << e.what() << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << "Makes a new random API key for principal NAME (32 bytes, 64 hex digits) and\n"
                 "prints it on the first line; the second line is NAME's line for the\n"
                 "server's principals file: NAME ROLES ACCOUNTS SHA256, the SHA-256 of the\n"
                 "key's text (the server keeps only that). The client logs on with\n"
                 "--principal NAME --api-key-file FILE (the key on FILE's first line).\n\n"
              << d;
    return 0;
  }
  if (std::string bad = check_fields(name, roles, accounts); !bad.empty()) {
    std::cerr << "exchange-client keygen: " << bad << " (see --help)\n";
    return 2;
  }
  const std::string key = random_api_key();
  const std::string line = name + " " + roles + " " + accounts + " " + sha256_hex(key);
  if (!key_out.empty()) {
    write_key_file(key_out, key);  // std::runtime_error: exit status 1 (main)
    std::cout << line << "\n";
    std::cerr << "exchange-client keygen: the key is in " << key_out << " (mode 0600; give it to "
              << name
              << "'s client as --api-key-file); the line above goes into the server's "
                 "principals file\n";
    return 0;
  }
  std::cout << key << "\n" << line << "\n";
  std::cerr << "exchange-client keygen: line 1 is the key, for " << name
            << "'s client only (a file for --api-key-file, kept secret); line 2 goes into the "
               "server's principals file\n";
  return 0;
}

}  // namespace exch
