// exchange-server --config FILE (issue 39): the same settings as the flags, one `name = value`
// a line; the command line wins; a bad line stops the start with exit 2, naming the file's line.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "support/checks.hpp"
#include "support/server_process.hpp"
#include "support/wire_client.hpp"

using namespace testing_support;

namespace {

struct ConfigFile {
  explicit ConfigFile(const std::string& text) {
    char name[] = "/tmp/exchange_config_XXXXXX";
    int fd = ::mkstemp(name);
    REQUIRE(fd >= 0);
    ::close(fd);
    path = name;
    std::ofstream(path) << text;
  }
  ~ConfigFile() { std::remove(path.c_str()); }
  std::string path;
};

// A <create> padded to `bytes`.
std::string request_of(std::size_t bytes) {
  std::string body = "<create><account id=\"1\" balance=\"1\"/></create>";
  return body + std::string(bytes - body.size(), ' ');
}

}  // namespace

TEST_CASE("--config sets what the flags set, and a flag on the command line wins",
          "[e2e][settings]") {
  ConfigFile config(
      "# a small exchange\nconcurrency = reactor\nmax-request-bytes = 100  # bytes\nreset = "
      "true\n");
  {
    ServerProcess server({"--config", config.path});
    CHECK(contains(send_request(server.port(), request_of(101)),
                   "Request of 101 bytes exceeds the limit of 100 bytes"));
    CHECK(server.stop() == 0);
  }
  ServerProcess server({"--config", config.path, "--max-request-bytes", "1000"});
  const std::string reply = send_request(server.port(), request_of(101));
  CHECK(contains(reply, "<created"));
  CHECK_FALSE(contains(reply, "exceeds the limit"));
  CHECK(server.stop() == 0);
}

TEST_CASE("a bad --config line or value stops the start with exit 2, naming it",
          "[e2e][settings]") {
  ConfigFile unknown("read-timeout-ms = 500\ncolour = blue\n");
  std::string output;
  CHECK(run_to_exit({"--config", unknown.path}, output) == 2);
  CHECK(contains(output, unknown.path + ":2: unknown setting 'colour'"));
  ConfigFile out_of_range("lease-ms = 5\n");
  CHECK(run_to_exit({"--config", out_of_range.path}, output) == 2);
  CHECK(contains(output, ":1: lease-ms must be an integer at least 100 ms, not '5'"));
  CHECK(run_to_exit({"--read-timeout-ms", "-1"}, output) == 2);
  CHECK(contains(output, "--read-timeout-ms must be an integer at least 1 ms, not '-1'"));
}
