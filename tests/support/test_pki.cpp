#include "support/test_pki.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace testing_support {
namespace {

void run(const std::string& command) {
  if (std::system((command + " >/dev/null 2>&1").c_str()) != 0)
    throw std::runtime_error("openssl failed: " + command);
}

// A P-256 key and a self-signed CA certificate at DIR/NAME.key, DIR/NAME.crt.
void make_ca(const std::string& dir, const std::string& name) {
  run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout " + dir + "/" +
      name + ".key -out " + dir + "/" + name + ".crt -subj /CN=" + name + " -days 2");
}

}  // namespace

TestPki::TestPki() {
  char pattern[] = "/tmp/exchange-pki-XXXXXX";
  if (!::mkdtemp(pattern)) throw std::runtime_error("mkdtemp failed");
  dir_ = pattern;
  make_ca(dir_, "ca");
  make_ca(dir_, "other-ca");
  std::ofstream(dir_ + "/server.ext") << "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
  issue("server", "127.0.0.1", "ca", 2, dir_ + "/server.ext");
}

TestPki::~TestPki() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

void TestPki::issue(const std::string& base, const std::string& cn, const std::string& ca, int days,
                    const std::string& extension) {
  const std::string path = dir_ + "/" + base;
  run("openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout " + path +
      ".key -out " + path + ".csr -subj /CN=" + cn);
  run("openssl x509 -req -in " + path + ".csr -CA " + dir_ + "/" + ca + ".crt -CAkey " + dir_ +
      "/" + ca + ".key -CAcreateserial -out " + path + ".crt -days " + std::to_string(days) +
      (extension.empty() ? "" : " -extfile " + extension));
}

std::string TestPki::client(const std::string& name, bool expired) {
  const std::string base = (expired ? "expired-" : "client-") + name;
  if (!std::filesystem::exists(dir_ + "/" + base + ".crt"))
    issue(base, name, "ca", expired ? -1 : 2);
  return dir_ + "/" + base;
}

std::string TestPki::stranger(const std::string& name) {
  const std::string base = "stranger-" + name;
  if (!std::filesystem::exists(dir_ + "/" + base + ".crt")) issue(base, name, "other-ca", 2);
  return dir_ + "/" + base;
}

}  // namespace testing_support
