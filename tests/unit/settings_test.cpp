// Settings declared once (util/settings.hpp) and parsed from argv and --config FILE
// (cli/settings_parser.hpp): values, ranges and the errors that name them, the file's syntax
// and line numbers, and the command line winning over the file.
#include "util/settings.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cli/settings_parser.hpp"

namespace {

struct Options {
  unsigned port = 12345;
  std::size_t max_bytes = 1 << 20;
  std::int64_t keep = 0;
  std::chrono::milliseconds timeout{30000};
  std::string name = "pool";
  bool standby = false;
};

void declare(util::Settings& s, Options& o) {
  s.add("port", "Serving", &o.port).at_most(65535).help("the port");
  s.add("max-bytes", "Limits", &o.max_bytes).at_least(1).unit("bytes").help("bytes");
  s.add("keep", "Limits", &o.keep).at_least(0).help("entries kept");
  s.add("timeout-ms", "Limits", &o.timeout).at_least(1).unit("ms").help("a deadline");
  s.add("name", "Serving", &o.name).help("a name");
  s.add("standby", "Serving", &o.standby).help("a switch");
}

// A file in /tmp with `text`, removed at the end of the test.
struct TempFile {
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/settings_test_XXXXXX";
    int fd = ::mkstemp(name);
    REQUIRE(fd >= 0);
    ::close(fd);
    path = name;
    std::ofstream(path) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
  std::string path;
};

std::optional<int> parse(Options& o, std::vector<std::string> args) {
  util::Settings s;
  declare(s, o);
  args.insert(args.begin(), "test");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return cli::parse_settings(static_cast<int>(argv.size()), argv.data(), s, "test");
}

}  // namespace

TEST_CASE("a setting parses whole decimal integers within its range, naming the range",
          "[settings]") {
  Options o;
  util::Settings s;
  declare(s, o);
  util::Setting& port = *s.find("port");
  CHECK_FALSE(port.set("8080"));
  CHECK(o.port == 8080);
  CHECK(port.set("65536") == std::string("must be an integer between 0 and 65535, not '65536'"));
  CHECK(port.set("-1").has_value());  // never wrapped around into an unsigned field
  CHECK(port.set("12x").has_value());
  CHECK(port.set(" 1").has_value());
  CHECK(port.set("1e3").has_value());
  CHECK(port.set("").has_value());
  CHECK(o.port == 8080);  // a refused value changes nothing
  util::Setting& bytes = *s.find("max-bytes");
  CHECK(bytes.set("0") == std::string("must be an integer at least 1 bytes, not '0'"));
  CHECK(bytes.set("99999999999999999999999").has_value());  // overflow
  CHECK_FALSE(bytes.set("4096"));
  CHECK(o.max_bytes == 4096);
  CHECK_FALSE(s.find("timeout-ms")->set("250"));
  CHECK(o.timeout == std::chrono::milliseconds(250));
  CHECK(s.find("timeout-ms")->value_text() == "250");
  CHECK(s.find("keep")->set("-5") == std::string("must be an integer at least 0, not '-5'"));
}

TEST_CASE("switches and text; a name is declared once", "[settings]") {
  Options o;
  util::Settings s;
  declare(s, o);
  CHECK_FALSE(s.find("standby")->set("yes"));
  CHECK(o.standby);
  CHECK_FALSE(s.find("standby")->set("off"));
  CHECK_FALSE(o.standby);
  CHECK(s.find("standby")->set("maybe").has_value());
  CHECK_FALSE(s.find("name")->set("reactor"));
  CHECK(o.name == "reactor");
  CHECK_THROWS_AS(s.add("port", "Serving", &o.port), std::logic_error);
  CHECK(s.groups() == std::vector<std::string>{"Serving", "Limits"});
}

TEST_CASE("--help lists every group, default, unit and range", "[settings]") {
  Options o;
  util::Settings s;
  declare(s, o);
  const std::string help = cli::settings_help(s, "caption");
  CHECK(help.find("--config arg") != std::string::npos);
  CHECK(help.find("--port arg (=12345)") != std::string::npos);
  CHECK(help.find("[between 0 and 65535]") != std::string::npos);
  CHECK(help.find("--timeout-ms arg (=30000)") != std::string::npos);
  CHECK(help.find("[at least 1 ms]") != std::string::npos);
  CHECK(help.find("Limits:") != std::string::npos);
  CHECK(help.find("  --standby ") != std::string::npos);  // a switch takes no value
}

TEST_CASE("a settings file: name = value lines, comments, errors naming the line", "[settings]") {
  Options o;
  util::Settings s;
  declare(s, o);
  TempFile good(
      "# the exchange\n\nport = 4000   # trailing comment\n  max-bytes=2048\nname = a#b\n"
      "standby = true\ntimeout-ms = 100\n");
  CHECK_FALSE(cli::apply_settings_file(good.path, s));
  CHECK(o.port == 4000);
  CHECK(o.max_bytes == 2048);
  CHECK(o.name == "a#b");  // `#` starts a comment only at a line's start or after a space
  CHECK(o.standby);
  CHECK(o.timeout == std::chrono::milliseconds(100));

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"port = 1\ncolour = blue\n", ":2: unknown setting 'colour'"},
      {"--port = 1\n", ":1: write the name without its dashes: 'port'"},
      {"port\n", ":1: expected `name = value`, got 'port'"},
      {"port = 1\nport = 2\n", ":2: 'port' is set twice in this file"},
      {"name =\n", ":1: 'name' has no value"},
      {"\n\nmax-bytes = 0\n", ":3: max-bytes must be an integer at least 1 bytes, not '0'"},
  };
  for (const auto& [text, problem] : bad) {
    TempFile f(text);
    auto p = cli::apply_settings_file(f.path, s);
    INFO(text);
    REQUIRE(p.has_value());
    CHECK(*p == f.path + problem);
  }
  CHECK(*cli::apply_settings_file("/nonexistent/exchange.conf", s) ==
        "cannot read --config /nonexistent/exchange.conf");
}

TEST_CASE("flags on the command line win over --config; problems exit 2", "[settings]") {
  TempFile file("port = 4000\nmax-bytes = 2048\n");
  Options o;
  CHECK_FALSE(parse(o, {"--config", file.path, "--port", "5000"}));
  CHECK(o.port == 5000);       // the command line's
  CHECK(o.max_bytes == 2048);  // the file's
  Options d;
  CHECK_FALSE(parse(d, {}));
  CHECK(d.port == 12345);  // the struct's default, untouched
  Options h;
  CHECK(parse(h, {"--help"}) == 0);
  Options u;
  CHECK(parse(u, {"--colour", "blue"}) == 2);
  Options r;
  CHECK(parse(r, {"--port", "70000"}) == 2);
  CHECK(r.port == 12345);
  Options twice;
  CHECK(parse(twice, {"--port", "1", "--port", "2"}) == 2);
  TempFile broken("port = x\n");
  Options b;
  CHECK(parse(b, {"--config", broken.path}) == 2);
  Options sw;
  CHECK_FALSE(parse(sw, {"--standby"}));
  CHECK(sw.standby);
}
