#include "auth/gate.hpp"

#include <exception>
#include <utility>

#include "auth/address_group.hpp"
#include "util/log.hpp"

namespace auth {
namespace {

// What a client sent (a name, an account id), as a log line may show it: printable ASCII only,
// so a name with a newline cannot forge a line, and at most `limit` characters of it.
std::string printable(std::string_view text, std::size_t limit) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < limit; ++i) {
    out += (text[i] >= 0x20 && text[i] < 0x7f) ? text[i] : '?';
  }
  if (text.size() > limit) out += "...";
  return out;
}

constexpr std::size_t kMaxDetailLength = 256;

// The hash an unknown name's key is compared with, so that a logon takes the same work
// whether or not the name exists (no key hashes to all zeros).
const KeyHash kNoHash{};

}  // namespace

const char* refusal_label(Refusal why) {
  switch (why) {
    case Refusal::BadKey:
      return "bad_key";
    case Refusal::LockedOut:
      return "locked_out";
    case Refusal::KeyNeedsTls:
      return "key_needs_tls";
    case Refusal::NotAuthenticated:
      return "not_authenticated";
    case Refusal::UnknownCertificate:
      return "unknown_certificate";
    case Refusal::UnknownPrincipal:
      return "unknown_principal";
    case Refusal::SessionEnded:
      return "session_ended";
    case Refusal::AccountNotPermitted:
      return "account_not_permitted";
    case Refusal::TradeNotPermitted:
      return "trade_not_permitted";
    case Refusal::CreateNotPermitted:
      return "create_not_permitted";
    case Refusal::Count:
      break;
  }
  return "unknown";
}

namespace {
std::shared_ptr<const Principals> numbered(Principals table, const Principals* previous,
                                           std::uint64_t& counter) {
  table.number(previous, counter);
  return std::make_shared<const Principals>(std::move(table));
}
}  // namespace

Gate::Gate(Options options)
    : options_(std::move(options)),
      table_(numbered(Principals::load(options_.principals_path), nullptr, generations_)),
      throttle_(options_.throttle) {}

std::shared_ptr<const Principals> Gate::principals() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return table_;
}

bool Gate::reload() {
  std::shared_ptr<const Principals> fresh;
  try {
    fresh = numbered(Principals::load(options_.principals_path), principals().get(), generations_);
  } catch (const PrincipalsError& e) {
    EXCHANGE_LOG(error) << "SIGHUP: refused the principals file: " << e.what()
                        << "; the last good one stays in force";
    return false;
  }
  const std::size_t count = fresh->size();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    table_.swap(fresh);
  }
  // `fresh` now holds the old table: freed here, outside the lock, unless a request still has it.
  EXCHANGE_LOG(info) << "SIGHUP: loaded the principals file " << options_.principals_path << ": "
                     << count << " principal" << (count == 1 ? "" : "s");
  return true;
}

std::optional<Refusal> Gate::logon(const Peer& peer, std::string_view name, std::string_view key,
                                   std::uint64_t* generation) {
  const auto now = LogonThrottle::Clock::now();
  const auto refuse = [&](Refusal why, std::string_view detail) {
    refused(why, peer.address, name, detail);
    return std::optional<Refusal>(why);
  };
  if (!peer.tls && !peer.loopback) return refuse(Refusal::KeyNeedsTls, {});
  const std::string group = address_group(peer.ip);
  if (throttle_.locked_out(group, name, now)) return refuse(Refusal::LockedOut, {});

  // The same work for an unknown name, a name without a key and a wrong key.
  const KeyHash hash = sha256(key);
  const std::shared_ptr<const Principals> table = principals();
  const Principal* principal = table->find(name);
  const bool has_key = principal != nullptr && principal->key_hash.has_value();
  const bool matches = same_hash(hash, has_key ? *principal->key_hash : kNoHash);
  if (!has_key || !matches) {
    throttle_.failed(group, name, principal != nullptr, now);
    return refuse(Refusal::BadKey, principal == nullptr ? "no such principal"
                                   : !has_key           ? "no key on file"
                                                        : "wrong key");
  }
  throttle_.succeeded(group, name);
  if (generation) *generation = principal->generation;
  return std::nullopt;
}

std::optional<std::uint64_t> Gate::generation_of(std::string_view name) const {
  const std::shared_ptr<const Principals> table = principals();
  const Principal* principal = table->find(name);
  if (!principal) return std::nullopt;
  return principal->generation;
}

bool Gate::current(std::string_view name, std::uint64_t generation) const {
  return generation_of(name) == generation;
}

std::uint64_t LogBudget::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (now - second_ >= std::chrono::seconds(1)) {
    second_ = now;
    logged_ = 0;
  }
  if (logged_ >= kPerSecond) {
    ++skipped_;
    return kSkip;
  }
  ++logged_;
  return std::exchange(skipped_, 0);
}

void Gate::refused(Refusal why, const std::string& peer, std::string_view principal,
                   std::string_view detail) {
  const auto index = static_cast<std::size_t>(why);
  if (index < kRefusalCount) refusals_[index].fetch_add(1, std::memory_order_relaxed);
  const std::uint64_t unlogged = log_budget_.take();
  if (unlogged == LogBudget::kSkip) return;
  if (unlogged > 0)
    EXCHANGE_LOG(warn) << unlogged << " refusals in the last second were not logged (at most "
                       << LogBudget::kPerSecond << " a second; /metrics counts them all)";
  EXCHANGE_LOG(warn) << "refused " << refusal_label(why) << " from " << peer << " (principal '"
                     << printable(principal, Principals::kMaxNameLength) << "')"
                     << (detail.empty() ? "" : ": ") << printable(detail, kMaxDetailLength);
}

std::array<std::uint64_t, kRefusalCount> Gate::refusals() const {
  std::array<std::uint64_t, kRefusalCount> counts{};
  for (std::size_t i = 0; i < kRefusalCount; ++i) {
    counts[i] = refusals_[i].load(std::memory_order_relaxed);
  }
  return counts;
}

}  // namespace auth
