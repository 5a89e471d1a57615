#pragma once
// Hash maps keyed by short strings (account ids, symbols), looked up for every order.
//
// Why not std::unordered_map<std::string, V> as it is: libstdc++ (GCC 12) counts std::hash of a
// string as a slow hash, and so finds a key in a table of at most 20 elements by comparing it
// with every element in turn, each a separate heap node. An account's positions and the
// symbols' books are such tables: that scan was most of Engine::place_order's own time
// (docs/notes/performance-history.md, "Per-order CPU budget, before and after issue 21"). With
// a hash functor of our own the table hashes at every size. Its call is deliberately not
// noexcept: libstdc++ then keeps each key's hash in its node, as it does for
// std::hash<std::string>, instead of hashing keys again while walking a bucket.
#include <cstddef>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>

#include <boost/container_hash/hash.hpp>

namespace market {

struct StringHash {
  std::size_t operator()(const std::string& s) const { return std::hash<std::string>{}(s); }
};

// A pair of strings (an account and a symbol: a position's key).
struct StringPairHash {
  std::size_t operator()(const std::pair<std::string, std::string>& p) const {
    std::size_t h = std::hash<std::string>{}(p.first);
    boost::hash_combine(h, std::hash<std::string>{}(p.second));
    return h;
  }
};

template <typename V>
using StringMap = std::unordered_map<std::string, V, StringHash>;

}  // namespace market
