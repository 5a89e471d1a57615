#pragma once
// Authentication's one door (--principals): the principals in force, swapped whole on a reload
// (SIGHUP) so a request sees either the old table or the new one; key logons checked against
// them with the throttle; every refusal counted by reason and logged with the peer and the
// principal (never a key). The session layer asks it at logon and for certificates; the
// request handler asks it for the principal behind every request (gates/authorize.hpp).
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "auth/logon_throttle.hpp"
#include "auth/principals.hpp"

namespace auth {

// Why a connection or a request was refused; also the label of its /metrics counter.
enum class Refusal : std::uint8_t {
  BadKey,               // logon: unknown name, no key on file, or a wrong key
  LockedOut,            // logon: too many failures from this address (--logon-max-failures)
  KeyNeedsTls,          // logon: a key over plaintext from a non-loopback address
  NotAuthenticated,     // a request before any logon, without a certificate
  UnknownCertificate,   // a verified certificate whose name is no principal
  UnknownPrincipal,     // a request by a principal no longer in the file (after a reload)
  SessionEnded,         // a request on a session whose principal's key changed or was removed
  AccountNotPermitted,  // <transactions> for an account the principal does not hold
  TradeNotPermitted,    // <transactions> by a principal without the trade role
  CreateNotPermitted,   // <create> by a principal without the admin role
  Count,
};
inline constexpr std::size_t kRefusalCount = static_cast<std::size_t>(Refusal::Count);

// "bad_key", "locked_out", ...: the /metrics label.
const char* refusal_label(Refusal why);

// Who is on the other end of a connection.
struct Peer {
  std::string address;  // "ip:port", for log lines
  std::string ip;       // the throttle counts its address group (auth/address_group.hpp)
  bool loopback = false;
  bool tls = false;
};

// At most kPerSecond refusal lines a second, so a flood of bad logons cannot fill the disk
// with log lines; the counters still count every refusal. Thread-safe.
class LogBudget {
 public:
  static constexpr std::uint64_t kPerSecond = 100;
  static constexpr std::uint64_t kSkip = ~std::uint64_t{0};
  // kSkip: do not log this one. Otherwise log it, after saying how many were skipped since the
  // last line logged (the returned number, 0 for none).
  std::uint64_t take();

 private:
  std::mutex mutex_;
  std::chrono::steady_clock::time_point second_{};
  std::uint64_t logged_ = 0, skipped_ = 0;
};

class Gate {
 public:
  struct Options {
    std::string principals_path;  // --principals
    LogonThrottle::Options throttle;
  };

  // Loads the file; throws PrincipalsError (naming the file and line) when it is bad.
  explicit Gate(Options options);

  // The table in force now; a reload does not change a table already taken.
  std::shared_ptr<const Principals> principals() const;
  // Reads the file again: a good one replaces the table (logged with its size), a bad one is
  // refused whole with a log line naming the file and line and the last good one stays.
  bool reload();

  // A key logon: nullopt when the key is right (and `generation`, if given, set to the entry's
  // generation: Principal::generation), else the refusal (counted and logged). Refuses without
  // looking at the key when the peer is locked out, and over plaintext unless the peer is on
  // loopback.
  std::optional<Refusal> logon(const Peer& peer, std::string_view name, std::string_view key,
                               std::uint64_t* generation = nullptr);
  // The generation of a verified certificate's name if it is a principal now.
  std::optional<std::uint64_t> generation_of(std::string_view name) const;
  bool knows(std::string_view name) const { return generation_of(name).has_value(); }
  // Whether a session that logged on as `name` at `generation` may go on: the entry is still
  // there with the same key.
  bool current(std::string_view name, std::uint64_t generation) const;
  // Counts and logs a refusal decided elsewhere (the session, the request handler).
  void refused(Refusal why, const std::string& peer, std::string_view principal,
               std::string_view detail = {});
  // Refusals so far, by reason.
  std::array<std::uint64_t, kRefusalCount> refusals() const;
  const std::string& path() const { return options_.principals_path; }

 private:
  const Options options_;
  mutable std::mutex mutex_;  // guards table_ (the swap and the copy of the pointer)
  // The last generation given (reloads run on one thread); before table_, which the
  // constructor numbers with it.
  std::uint64_t generations_ = 0;
  std::shared_ptr<const Principals> table_;
  LogonThrottle throttle_;
  std::array<std::atomic<std::uint64_t>, kRefusalCount> refusals_{};
  LogBudget log_budget_;
};

}  // namespace auth
