#include "auth/principals.hpp"

#include <cerrno>
#include <cstdio>
#include <memory>
#include <system_error>
#include <utility>
#include <vector>

namespace auth {
namespace {

// A principals file is a few lines per principal; anything this large is a mistake (the wrong
// path), and refusing it bounds what a reload reads.
constexpr std::size_t kMaxFileBytes = 16 * 1024 * 1024;
// How much of a bad field an error message quotes.
constexpr std::size_t kMaxQuoted = 64;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

bool is_name_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '@' || c == '-';
}

bool all_digits(std::string_view text) {
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return !text.empty();
}

// A field as an error message quotes it: printable ASCII only, and not too long.
std::string quoted(std::string_view text) {
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < kMaxQuoted; ++i) {
    out += (text[i] >= 0x20 && text[i] < 0x7f) ? text[i] : '?';
  }
  if (text.size() > kMaxQuoted) out += "...";
  return out + "'";
}

// The line without its comment, cut into whitespace-separated fields.
std::vector<std::string_view> fields_of(std::string_view line) {
  line = line.substr(0, line.find('#'));
  std::vector<std::string_view> fields;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    const std::size_t start = i;
    while (i < line.size() && !is_space(line[i])) ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
  return fields;
}

// "a,b,c" into its items (empty ones kept, for the caller to refuse).
std::vector<std::string_view> split_commas(std::string_view text) {
  std::vector<std::string_view> items;
  for (std::size_t start = 0;;) {
    const std::size_t comma = text.find(',', start);
    items.push_back(text.substr(start, comma - start));
    if (comma == std::string_view::npos) return items;
    start = comma + 1;
  }
}

// Parses one line's fields; reports what is wrong through `fail`, which throws.
class LineParser {
 public:
  LineParser(const std::string& source, std::size_t line) : source_(source), line_(line) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw PrincipalsError(source_ + ":" + std::to_string(line_) + ": " + what);
  }

  Principal principal(const std::vector<std::string_view>& fields) const {
    if (fields.size() != 4) {
      fail("expected 4 fields (name roles accounts api-key), found " +
           std::to_string(fields.size()));
    }
    Principal p;
    p.name = name(fields[0]);
    roles(fields[1], p);
    accounts(fields[2], p);
    p.key_hash = key_hash(fields[3]);
    return p;
  }

 private:
  std::string name(std::string_view text) const {
    if (text.size() > Principals::kMaxNameLength) {
      fail("name " + quoted(text) + " is longer than " +
           std::to_string(Principals::kMaxNameLength) + " characters");
    }
    for (char c : text) {
      if (!is_name_char(c)) {
        fail("bad name " + quoted(text) + " (a name is letters, digits and . _ @ -)");
      }
    }
    return std::string(text);
  }

  // Repeats are tolerated: "trade,trade" grants what "trade" does.
  void roles(std::string_view text, Principal& p) const {
    for (std::string_view role : split_commas(text)) {
      if (role == "trade") {
        p.trade = true;
      } else if (role == "admin") {
        p.admin = true;
      } else if (role.empty()) {
        fail("empty role in " + quoted(text));
      } else {
        fail("unknown role " + quoted(role) + " (roles are trade and admin)");
      }
    }
  }

  void accounts(std::string_view text, Principal& p) const {
    if (text == "*") {
      p.all_accounts = true;
      return;
    }
    if (text == "-") return;
    for (std::string_view account : split_commas(text)) {
      if (account.empty()) fail("empty account in " + quoted(text));
      if (!all_digits(account)) {
        fail("bad account " + quoted(account) +
             " (an account id is decimal digits; or '*' for all, '-' for none)");
      }
      p.accounts.emplace(account);
    }
  }

  // Never quotes the field: a key pasted where its hash belongs must not reach a log.
  std::optional<KeyHash> key_hash(std::string_view text) const {
    if (text == "-") return std::nullopt;
    std::optional<KeyHash> hash = parse_hex(text);
    if (!hash) {
      fail("bad api-key hash (" + std::to_string(text.size()) +
           " characters): expected '-' or 64 lowercase hex digits, the sha256 of the key");
    }
    return hash;
  }

  const std::string& source_;
  const std::size_t line_;
};

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

[[noreturn]] void cannot_read(const std::string& path, int error) {
  throw PrincipalsError("cannot read " + path + ": " +
                        std::error_code(error, std::generic_category()).message());
}

// The whole file, refused past kMaxFileBytes (counted as read, so a pipe is bounded too).
std::string read_file(const std::string& path) {
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) cannot_read(path, errno);
  std::string text;
  char buffer[64 * 1024];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, file.get())) {
    text.append(buffer, n);
    if (text.size() > kMaxFileBytes) {
      throw PrincipalsError("cannot read " + path + ": larger than 16 MiB");
    }
  }
  if (std::ferror(file.get())) cannot_read(path, errno);
  return text;
}

}  // namespace

bool Principal::holds(std::string_view account) const {
  return all_accounts || accounts.count(std::string(account)) != 0;
}

Principals Principals::parse(std::string_view text, const std::string& source) {
  Principals table;
  std::unordered_map<std::string, std::size_t> first_line;  // name -> its line, for repeats
  std::size_t number = 0;
  for (std::size_t start = 0; start <= text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++number;
    const std::vector<std::string_view> fields = fields_of(line);
    if (fields.empty()) continue;
    const LineParser parser(source, number);
    Principal p = parser.principal(fields);
    const auto [first, fresh] = first_line.emplace(p.name, number);
    if (!fresh) {
      parser.fail("repeated name " + quoted(p.name) + " (first on line " +
                  std::to_string(first->second) + ")");
    }
    std::string name = p.name;
    table.by_name_.emplace(std::move(name), std::move(p));
  }
  return table;
}

Principals Principals::load(const std::string& path) { return parse(read_file(path), path); }

void Principals::number(const Principals* previous, std::uint64_t& counter) {
  for (auto& [name, principal] : by_name_) {
    const Principal* before = previous ? previous->find(name) : nullptr;
    const bool same_key = before &&
                          before->key_hash.has_value() == principal.key_hash.has_value() &&
                          (!principal.key_hash || *before->key_hash == *principal.key_hash);
    principal.generation = same_key ? before->generation : ++counter;
  }
}

const Principal* Principals::find(std::string_view name) const {
  const auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : &it->second;
}

}  // namespace auth
