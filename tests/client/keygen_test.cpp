// exchange-client keygen, and the flags of TLS and the logon: what is a usage error (exit 2),
// what cannot be loaded (exit 1), and the key file's first line.
#include "keygen.hpp"

#include <openssl/sha.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "bench/options.hpp"
#include "connect_flags.hpp"
#include "send.hpp"

using namespace exch;

namespace {

// Runs a command's entry point with argv, capturing what it prints.
struct Run {
  int status = 0;
  std::string out, err;
};

template <typename Main>
Run run(Main main, std::vector<const char*> args) {
  std::ostringstream out, err;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  Run r;
  try {
    r.status = main(static_cast<int>(args.size()), args.data());
  } catch (const std::exception& e) {
    r.status = 1;  // what main() does with an exception
    err << e.what();
  }
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// SHA-256 with OpenSSL's one-shot function, independently of keygen's.
std::string sha256_reference(const std::string& text) {
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), d);
  char hex[2 * SHA256_DIGEST_LENGTH + 1];
  for (int i = 0; i < SHA256_DIGEST_LENGTH; ++i) std::snprintf(hex + 2 * i, 3, "%02x", d[i]);
  return hex;
}

std::string temp_dir() {
  std::string templ = (std::filesystem::temp_directory_path() / "client-keys-XXXXXX").string();
  REQUIRE(::mkdtemp(templ.data()) != nullptr);
  return templ;
}

}  // namespace

TEST_CASE("keygen: a random key, and its principals line with the key's SHA-256", "[keygen]") {
  Run r = run(run_keygen, {"keygen", "desk-a", "--accounts", "1001,1002"});
  REQUIRE(r.status == 0);
  auto out = lines(r.out);
  REQUIRE(out.size() == 2);
  const std::string& key = out[0];
  CHECK(key.size() == 64);
  CHECK(key.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(out[1] == "desk-a trade 1001,1002 " + sha256_reference(key));
  CHECK_THAT(r.err, Catch::Contains("principals file"));
  CHECK(r.err.find(key) == std::string::npos);

  Run again = run(run_keygen, {"keygen", "ops", "--roles", "admin,trade", "--accounts", "*"});
  auto second = lines(again.out);
  REQUIRE(second.size() == 2);
  CHECK(second[0] != key);
  CHECK(second[1] == "ops admin,trade * " + sha256_reference(second[0]));
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("keygen: --key-out writes the key to a new 0600 file, not to stdout", "[keygen]") {
  std::string dir = temp_dir();
  std::string file = dir + "/desk-a.key";
  Run r = run(run_keygen, {"keygen", "desk-a", "--key-out", file.c_str()});
  REQUIRE(r.status == 0);
  auto out = lines(r.out);
  REQUIRE(out.size() == 1);
  std::ifstream in(file);
  std::string key;
  std::getline(in, key);
  CHECK(out[0] == "desk-a trade - " + sha256_reference(key));
  struct stat st {};
  REQUIRE(::stat(file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(read_api_key_file(file) == key);
  // An existing key is never overwritten.
  Run twice = run(run_keygen, {"keygen", "desk-a", "--key-out", file.c_str()});
  CHECK(twice.status == 1);
  CHECK_THAT(twice.err, Catch::Contains("never overwritten"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("keygen: names, roles and accounts the server could not parse are usage errors",
          "[keygen]") {
  CHECK(run(run_keygen, {"keygen"}).status == 2);
  CHECK(run(run_keygen, {"keygen", "#x"}).status == 2);
  CHECK(run(run_keygen, {"keygen", "a/b"}).status == 2);  // the server takes . _ @ - only
  const std::string too_long(129, 'a');
  CHECK(run(run_keygen, {"keygen", too_long.c_str()}).status == 2);
  CHECK(run(run_keygen, {"keygen", "desk-a.x@y_z"}).status == 0);
  CHECK(run(run_keygen, {"keygen", "a", "--roles", "root"}).status == 2);
  CHECK(run(run_keygen, {"keygen", "a", "--accounts", "1001,x"}).status == 2);
  CHECK(run(run_keygen, {"keygen", "a", "--accounts", "1001,,2"}).status == 2);
}

TEST_CASE("security flags: what goes together", "[options]") {
  auto bad = [](SecurityFlags f) { return check_security_flags(f); };
  SecurityFlags ok;
  CHECK(bad(ok).empty());
  SecurityFlags f = ok;
  f.ca_file = "ca.pem";
  CHECK(bad(f) == "--ca, --cert and --key need --tls");
  f.tls = true;
  CHECK(bad(f).empty());
  f.cert_file = "c.pem";
  CHECK(bad(f) == "--cert needs --key");
  f.key_file = "c.key";
  CHECK(bad(f).empty());
  f.cert_file.clear();
  CHECK(bad(f) == "--key needs --cert");
  SecurityFlags p = ok;
  p.principal = "alice";
  CHECK(bad(p) == "--principal needs --api-key-file");
  p.api_key_file = "k";
  CHECK(bad(p).empty());
  p.principal.clear();
  CHECK(bad(p) == "--api-key-file needs --principal");
  p.principal = "two words";
  CHECK_FALSE(bad(p).empty());
  SecurityFlags r = ok;
  r.tls_resume = "maybe";
  CHECK(bad(r) == "--tls-resume must be on or off");
  SecurityFlags v = ok;
  v.tls_max_version = "1.1";
  CHECK(bad(v) == "--tls-max-version must be 1.3 or 1.2");
}

TEST_CASE("security flags: bench and send refuse bad combinations with exit status 2",
          "[options]") {
  bench::BenchOptions o;
  const char* no_key[] = {"bench", "--tls", "--cert", "c.pem"};
  auto parsed = bench::parse_bench_options(4, no_key, o);
  CHECK(parsed.kind == bench::ParseOutcome::Error);
  CHECK(parsed.message == "--cert needs --key");
  bench::BenchOptions q;
  const char* good[] = {"bench",       "--tls", "--tls-resume",   "off",
                        "--principal", "alice", "--api-key-file", "k"};
  REQUIRE(bench::parse_bench_options(8, good, q).kind == bench::ParseOutcome::Run);
  CHECK(q.security.tls);
  CHECK(q.security.tls_resume == "off");
  CHECK(describe_security(q.security) == "tls (resumption off), principal alice");

  Run r = run(run_send, {"send", "--ca", "ca.pem", "x.xml"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--ca, --cert and --key need --tls"));
  CHECK(run(run_send, {"send", "--principal", "alice", "x.xml"}).status == 2);
}

TEST_CASE("security flags: files that cannot be loaded exit 1 with the reason", "[options]") {
  std::string dir = temp_dir();
  std::string missing = dir + "/missing.pem";
  Run r = run(run_send, {"send", "--tls", "--ca", missing.c_str(), "x.xml"});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::Contains("cannot load --ca " + missing + ": No such file or directory"));
  Run k = run(run_send, {"send", "--principal", "alice", "--api-key-file", missing.c_str(), "x"});
  CHECK(k.status == 1);
  CHECK_THAT(k.err, Catch::Contains("cannot read --api-key-file " + missing));

  std::string keyfile = dir + "/key";
  std::ofstream(keyfile) << "  abc123 \r\nsecond line\n";
  CHECK(read_api_key_file(keyfile) == "abc123");
  std::ofstream(keyfile) << "\nabc\n";
  CHECK_THROWS_WITH(read_api_key_file(keyfile), Catch::Contains("no key on its first line"));
  std::ofstream(keyfile) << "ab c\n";
  CHECK_THROWS_WITH(read_api_key_file(keyfile), Catch::Contains("must be one word"));
  std::filesystem::remove_all(dir);
}
