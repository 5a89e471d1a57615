#pragma once
// The principals file (--principals): who may act for which accounts, with which roles, and the
// hash of each one's API key. One principal a line, whitespace-separated, '#' starts a comment:
//
//   # name    roles        accounts      api-key (sha256 hex of the key, or -)
//   ops       admin,trade  *             -
//   desk-a    trade        1001,1002     -
//
// roles: trade and/or admin, comma-separated; accounts: '*', '-' (none), or account ids
// (exact strings) comma-separated. A Principals is immutable once parsed: a reload builds a new
// one (auth/gate.hpp swaps them).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "auth/key.hpp"

namespace auth {

// A bad file: the message names the source (file name) and the line number.
class PrincipalsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Principal {
  std::string name;
  bool trade = false;  // orders, queries and cancels for its accounts
  bool admin = false;  // <create>: accounts and shares
  bool all_accounts = false;
  std::unordered_set<std::string> accounts;
  std::optional<KeyHash> key_hash;  // none: logs on with a certificate only
  // Which life of this name's entry (Principals::number): the same while the name stays in the
  // file with the same key, a new one when its key changes or it comes back after a removal.
  // A session carries the generation it logged on with and ends when it is no longer current.
  std::uint64_t generation = 0;

  // Whether it may trade for `account` (its role aside).
  bool holds(std::string_view account) const;
};

class Principals {
 public:
  // Longest principal name (a certificate's CN beyond it matches no principal).
  static constexpr std::size_t kMaxNameLength = 128;

  // Throws PrincipalsError naming `source` and the line for any bad line: a missing or extra
  // field, an unknown role, an empty account list, a malformed hash, a repeated name.
  static Principals parse(std::string_view text, const std::string& source);
  // Reads and parses `path`; PrincipalsError also when it cannot be read.
  static Principals load(const std::string& path);

  // Numbers each entry's generation: kept from `previous` (the table in force, or null) for a
  // name whose key is the same there, otherwise the next of `counter`, which only grows.
  void number(const Principals* previous, std::uint64_t& counter);

  // Null when no principal has that name.
  const Principal* find(std::string_view name) const;
  std::size_t size() const { return by_name_.size(); }

 private:
  std::unordered_map<std::string, Principal> by_name_;
};

}  // namespace auth
