// The principals file (auth/principals.hpp): the header's example lines, comments, '*' and '-',
// and every bad line refused with the file's name and the line's number.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unordered_set>

#include <catch2/catch.hpp>

#include "auth/principals.hpp"

using auth::Principal;
using auth::Principals;
using auth::PrincipalsError;

namespace {

const std::string kHash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

Principals parse(const std::string& text) { return Principals::parse(text, "principals.txt"); }

// The message of the PrincipalsError that parsing `text` throws ("" if it does not throw).
std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const PrincipalsError& e) {
    return e.what();
  }
  return "";
}

// A file in the temporary directory, removed at the end of the test.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& name)
      : path((std::filesystem::temp_directory_path() /
              (name + "." + std::to_string(::getpid()) + ".txt"))
                 .string()) {}
  ~TempFile() { std::filesystem::remove(path); }
  void write(const std::string& text) const { std::ofstream(path) << text; }
};

}  // namespace

TEST_CASE("the header's example parses", "[unit][auth]") {
  const Principals table = parse(
      "# name    roles        accounts      api-key (sha256 hex of the key, or -)\n"
      "ops       admin,trade  *             -\n"
      "desk-a    trade        1001,1002     -\n");
  CHECK(table.size() == 2);

  const Principal* ops = table.find("ops");
  REQUIRE(ops != nullptr);
  CHECK(ops->name == "ops");
  CHECK(ops->admin);
  CHECK(ops->trade);
  CHECK(ops->all_accounts);
  CHECK_FALSE(ops->key_hash.has_value());

  const Principal* desk = table.find("desk-a");
  REQUIRE(desk != nullptr);
  CHECK(desk->trade);
  CHECK_FALSE(desk->admin);
  CHECK_FALSE(desk->all_accounts);
  CHECK(desk->accounts == std::unordered_set<std::string>{"1001", "1002"});

  CHECK(table.find("nobody") == nullptr);
  CHECK(table.find("desk") == nullptr);
}

TEST_CASE("a key hash, '-' for no accounts, tabs and comments after fields", "[unit][auth]") {
  const Principals table = parse(
      "\n   \n\t# only a comment\n"
      "bot@desk_b.1\ttrade\t-\t" +
      kHash + "   # the bot's key\n" + "auditor admin - -#no space before the comment\r\n");
  CHECK(table.size() == 2);
  const Principal* bot = table.find("bot@desk_b.1");
  REQUIRE(bot != nullptr);
  REQUIRE(bot->key_hash.has_value());
  CHECK(auth::to_hex(*bot->key_hash) == kHash);
  CHECK(bot->accounts.empty());
  CHECK_FALSE(bot->all_accounts);
  CHECK_FALSE(bot->holds("1001"));

  const Principal* auditor = table.find("auditor");
  REQUIRE(auditor != nullptr);
  CHECK(auditor->admin);
  CHECK_FALSE(auditor->trade);
  CHECK_FALSE(auditor->key_hash.has_value());
}

TEST_CASE("an empty file is valid and nobody is a principal", "[unit][auth]") {
  CHECK(parse("").size() == 0);
  const Principals comments = parse("# nobody yet\n\n");
  CHECK(comments.size() == 0);
  CHECK(comments.find("ops") == nullptr);
}

TEST_CASE("holds: '*' holds every account, a list only its own, exactly", "[unit][auth]") {
  const Principals table = parse("all trade * -\nsome trade 1001,01002 -\n");
  const Principal* all = table.find("all");
  const Principal* some = table.find("some");
  REQUIRE(all != nullptr);
  REQUIRE(some != nullptr);
  CHECK(all->holds("1001"));
  CHECK(all->holds("99999"));
  CHECK(some->holds("1001"));
  CHECK(some->holds("01002"));
  CHECK_FALSE(some->holds("1002"));  // account ids are exact strings
  CHECK_FALSE(some->holds("01001"));
  CHECK_FALSE(some->holds(""));
}

TEST_CASE("repeated roles are tolerated", "[unit][auth]") {
  const Principals table = parse("a trade,trade,admin 1 -\n");
  const Principal* p = table.find("a");
  REQUIRE(p != nullptr);
  CHECK(p->trade);
  CHECK(p->admin);
}

TEST_CASE("each bad line is refused naming the file and its line", "[unit][auth]") {
  // Two good lines and a comment first, so the bad line is line 4.
  const std::string head = "# principals\nops admin,trade * -\ndesk trade 1001 -\n";
  const std::string prefix = "principals.txt:4: ";
  struct Case {
    std::string line;
    std::string message;
  };
  const Case cases[] = {
      {"x trade 1", "expected 4 fields (name roles accounts api-key), found 3"},
      {"x trade 1 - extra", "expected 4 fields (name roles accounts api-key), found 5"},
      {"x trade 1 - # ok\nx", "expected 4 fields"},  // line 5: checked below
      {"x root 1 -", "unknown role 'root' (roles are trade and admin)"},
      {"x Trade 1 -", "unknown role 'Trade'"},
      {"x trade, 1 -", "empty role in 'trade,'"},
      {"x ,trade 1 -", "empty role in ',trade'"},
      {"x trade 1,,2 -", "empty account in '1,,2'"},
      {"x trade 1, -", "empty account in '1,'"},
      {"x trade , -", "empty account in ','"},
      {"x trade 10a1 -", "bad account '10a1'"},
      {"x trade *,1 -", "bad account '*'"},
      {"x trade -1 -", "bad account '-1'"},
      {"bad/name trade 1 -", "bad name 'bad/name'"},
      {"x trade 1 " + kHash.substr(1), "bad api-key hash (63 characters)"},
      {"x trade 1 " + kHash + "0", "bad api-key hash (65 characters)"},
      {"x trade 1 9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08",
       "bad api-key hash (64 characters)"},
      {"x trade 1 " + kHash.substr(0, 63) + "g", "bad api-key hash"},
      {"desk trade 1002 -", "repeated name 'desk' (first on line 3)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.line);
    const std::string message = error_of(head + c.line + "\n");
    const bool on_line_5 = c.line.find('\n') != std::string::npos;
    CHECK(message.rfind(on_line_5 ? "principals.txt:5: " : prefix, 0) == 0);
    CHECK(message.find(c.message) != std::string::npos);
  }
}

TEST_CASE("the exact wording of an unknown role", "[unit][auth]") {
  CHECK(error_of("a trade 1 -\n\n\nb root 1 -\n") ==
        "principals.txt:4: unknown role 'root' (roles are trade and admin)");
}

TEST_CASE("a bad hash is never quoted: it may be a key pasted in its place", "[unit][auth]") {
  const std::string key = "my-secret-key-pasted-where-its-hash-belongs";
  const std::string message = error_of("a trade 1 " + key + "\n");
  CHECK(message.rfind("principals.txt:1: bad api-key hash", 0) == 0);
  CHECK(message.find(key) == std::string::npos);
}

TEST_CASE("names: up to kMaxNameLength of letters, digits and . _ @ -", "[unit][auth]") {
  const std::string longest(Principals::kMaxNameLength, 'n');
  CHECK(parse(longest + " trade 1 -\n").find(longest) != nullptr);
  const std::string message = error_of(longest + "n trade 1 -\n");
  CHECK(message.rfind("principals.txt:1: name '", 0) == 0);
  CHECK(message.find("is longer than 128 characters") != std::string::npos);
  CHECK(error_of("caf\xc3\xa9 trade 1 -\n").rfind("principals.txt:1: bad name", 0) == 0);
  CHECK(error_of("a,b trade 1 -\n").rfind("principals.txt:1: bad name 'a,b'", 0) == 0);
}

TEST_CASE("load reads a file and names it in errors", "[unit][auth]") {
  const TempFile file("auth_principals_test");
  file.write("ops admin * -\n# comment\nops trade 1 -\n");
  try {
    Principals::load(file.path);
    FAIL("a repeated name was accepted");
  } catch (const PrincipalsError& e) {
    CHECK(std::string(e.what()) == file.path + ":3: repeated name 'ops' (first on line 1)");
  }
  file.write("ops admin * -\n");
  const Principals table = Principals::load(file.path);
  CHECK(table.size() == 1);
  CHECK(table.find("ops") != nullptr);
}

TEST_CASE("load refuses a missing file and one over 16 MiB", "[unit][auth]") {
  try {
    Principals::load("/nonexistent/principals.txt");
    FAIL("a missing file was accepted");
  } catch (const PrincipalsError& e) {
    CHECK(std::string(e.what()) ==
          "cannot read /nonexistent/principals.txt: No such file or directory");
  }

  // Exactly 16 MiB of comments is still read; one byte more is not.
  const TempFile file("auth_principals_big");
  const std::string comment = std::string(1023, '#') + "\n";
  std::string text;
  for (int i = 0; i < 16 * 1024; ++i) text += comment;
  file.write(text);
  CHECK(Principals::load(file.path).size() == 0);
  file.write(text + "\n");
  try {
    Principals::load(file.path);
    FAIL("a file over 16 MiB was accepted");
  } catch (const PrincipalsError& e) {
    CHECK(std::string(e.what()) == "cannot read " + file.path + ": larger than 16 MiB");
  }
}
