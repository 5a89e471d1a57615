// Gate (auth/gate.hpp): key logons against the principals in force, the throttle and the TLS
// rule in front of them, reloads that keep the last good table, and refusals counted by reason.
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "auth/gate.hpp"

using auth::Gate;
using auth::Peer;
using auth::Refusal;

namespace {

// A principals file in the temporary directory, removed at the end of the test.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& name)
      : path((std::filesystem::temp_directory_path() /
              (name + "." + std::to_string(::getpid()) + ".txt"))
                 .string()) {}
  ~TempFile() { std::filesystem::remove(path); }
  void write(const std::string& text) const { std::ofstream(path) << text; }
};

// A principal line whose key is `key`.
std::string line(const std::string& name, const std::string& key) {
  return name + " trade 1001 " + auth::to_hex(auth::sha256(key)) + "\n";
}

Gate::Options options(const TempFile& file, unsigned max_failures = 5) {
  Gate::Options o;
  o.principals_path = file.path;
  o.throttle.max_failures = max_failures;
  o.throttle.lockout = std::chrono::minutes(1);
  return o;
}

Peer loopback() { return Peer{"127.0.0.1:40000", "127.0.0.1", true, false}; }
Peer remote_plain() { return Peer{"192.0.2.7:40000", "192.0.2.7", false, false}; }
Peer remote_tls(const std::string& ip = "192.0.2.8") {
  return Peer{ip + ":40000", ip, false, true};
}

std::uint64_t count(const Gate& gate, Refusal why) {
  return gate.refusals()[static_cast<std::size_t>(why)];
}

}  // namespace

TEST_CASE("a key logon: the right key, a wrong one, an unknown name", "[unit][auth]") {
  const TempFile file("auth_gate_logon");
  file.write(line("desk", "right key") + "nokey trade 1001 -\n");
  Gate gate(options(file));
  CHECK(gate.path() == file.path);

  CHECK(gate.logon(loopback(), "desk", "right key") == std::nullopt);
  CHECK(gate.logon(loopback(), "desk", "wrong key") == Refusal::BadKey);
  CHECK(gate.logon(loopback(), "nobody", "right key") == Refusal::BadKey);
  CHECK(gate.logon(loopback(), "nokey", "") == Refusal::BadKey);  // certificate only
  CHECK(count(gate, Refusal::BadKey) == 3);
  CHECK(gate.knows("desk"));
  CHECK(gate.knows("nokey"));
  CHECK_FALSE(gate.knows("nobody"));
}

TEST_CASE("a key over plaintext only from loopback; over TLS from anywhere", "[unit][auth]") {
  const TempFile file("auth_gate_tls");
  file.write(line("desk", "k"));
  Gate gate(options(file));
  CHECK(gate.logon(remote_plain(), "desk", "k") == Refusal::KeyNeedsTls);
  // Refused before the key is looked at: a wrong key says the same.
  CHECK(gate.logon(remote_plain(), "desk", "wrong") == Refusal::KeyNeedsTls);
  CHECK(gate.logon(remote_tls(), "desk", "k") == std::nullopt);
  CHECK(count(gate, Refusal::KeyNeedsTls) == 2);
  CHECK(count(gate, Refusal::BadKey) == 0);
}

TEST_CASE("a name locks out after its failures from a group, even with the right key",
          "[unit][auth]") {
  const TempFile file("auth_gate_lockout");
  file.write(line("desk", "k") + line("other", "o"));
  Gate gate(options(file, 2));
  CHECK(gate.logon(remote_tls(), "desk", "bad 1") == Refusal::BadKey);
  CHECK(gate.logon(remote_tls(), "desk", "bad 2") == Refusal::BadKey);
  CHECK(gate.logon(remote_tls(), "desk", "k") == Refusal::LockedOut);
  // Another name from the same address, and the same name from another address, are not.
  CHECK(gate.logon(remote_tls(), "other", "o") == std::nullopt);
  CHECK(gate.logon(remote_tls("192.0.2.9"), "desk", "k") == std::nullopt);
  CHECK(count(gate, Refusal::BadKey) == 2);
  CHECK(count(gate, Refusal::LockedOut) == 1);
}

TEST_CASE("every loopback address is one group; a group locks for every name", "[unit][auth]") {
  const TempFile file("auth_gate_group");
  file.write(line("desk", "k") + line("ops", "secret"));
  Gate::Options o = options(file, 5);
  o.throttle.max_group_failures = 8;
  Gate gate(o);
  // 4 guesses at ops from each of 127.0.1.1, 127.0.1.2, ...: on 6f484b8, 80 guesses and no
  // lockout from 20 addresses; now the fifth guess of the loopback group is the last.
  int refused_unlooked = 0;
  for (int i = 1; i <= 20; ++i) {
    const std::string ip = "127.0.1." + std::to_string(i);
    for (int g = 0; g < 4; ++g)
      if (gate.logon(Peer{ip + ":1", ip, true, false}, "ops", "guess") == Refusal::LockedOut)
        ++refused_unlooked;
  }
  CHECK(count(gate, Refusal::BadKey) == 5);
  CHECK(refused_unlooked == 75);
  // Every name from loopback is refused once the group has 8 failures.
  for (int g = 0; g < 3; ++g)
    CHECK(gate.logon(loopback(), "name" + std::to_string(g), "x") == Refusal::BadKey);
  CHECK(gate.logon(loopback(), "desk", "k") == Refusal::LockedOut);
  CHECK(gate.logon(remote_tls(), "desk", "k") == std::nullopt);
}

TEST_CASE("a success forgets its own name's failures, not another's", "[unit][auth]") {
  const TempFile file("auth_gate_forgive");
  file.write(line("desk", "k") + line("ops", "secret"));
  Gate gate(options(file, 2));
  CHECK(gate.logon(remote_tls(), "desk", "bad") == Refusal::BadKey);
  CHECK(gate.logon(remote_tls(), "desk", "k") == std::nullopt);
  CHECK(gate.logon(remote_tls(), "desk", "bad") == Refusal::BadKey);
  CHECK(gate.logon(remote_tls(), "desk", "k") == std::nullopt);
  // Guesses at ops, each followed by a logon of one's own: ops still locks.
  CHECK(gate.logon(remote_tls(), "ops", "guess 1") == Refusal::BadKey);
  CHECK(gate.logon(remote_tls(), "desk", "k") == std::nullopt);
  CHECK(gate.logon(remote_tls(), "ops", "guess 2") == Refusal::BadKey);
  CHECK(gate.logon(remote_tls(), "desk", "k") == std::nullopt);
  CHECK(gate.logon(remote_tls(), "ops", "secret") == Refusal::LockedOut);
}

TEST_CASE("a bad file at start throws, naming the file and line", "[unit][auth]") {
  const TempFile file("auth_gate_bad_start");
  file.write("ops admin * -\nops trade * -\n");
  CHECK_THROWS_WITH(Gate(options(file)), file.path + ":2: repeated name 'ops' (first on line 1)");
  CHECK_THROWS_AS(Gate(options(TempFile("auth_gate_missing"))), auth::PrincipalsError);
}

TEST_CASE("reload: a bad file is refused whole, a good one replaces the table", "[unit][auth]") {
  const TempFile file("auth_gate_reload");
  file.write(line("old", "k1"));
  Gate gate(options(file));
  const auto before = gate.principals();
  REQUIRE(before->find("old") != nullptr);

  // A bad last line refuses the good first line with it.
  file.write(line("new", "k2") + "broken trade\n");
  CHECK_FALSE(gate.reload());
  CHECK(gate.principals() == before);
  CHECK(gate.logon(loopback(), "old", "k1") == std::nullopt);
  CHECK(gate.logon(loopback(), "new", "k2") == Refusal::BadKey);

  file.write(line("new", "k2"));
  CHECK(gate.reload());
  const auto after = gate.principals();
  CHECK(after != before);
  CHECK(after->size() == 1);
  CHECK(after->find("new") != nullptr);
  CHECK(after->find("old") == nullptr);
  CHECK(gate.logon(loopback(), "new", "k2") == std::nullopt);
  CHECK(gate.logon(loopback(), "old", "k1") == Refusal::BadKey);
  CHECK_FALSE(gate.knows("old"));

  // The table taken before the reload is unchanged.
  CHECK(before->size() == 1);
  CHECK(before->find("old") != nullptr);
  CHECK(before->find("new") == nullptr);

  // A file gone is refused like a bad one.
  std::filesystem::remove(file.path);
  CHECK_FALSE(gate.reload());
  CHECK(gate.principals() == after);
}

TEST_CASE("refusals are counted by reason", "[unit][auth]") {
  const TempFile file("auth_gate_counts");
  file.write(line("desk", "k"));
  Gate gate(options(file));
  for (std::uint64_t n : gate.refusals()) CHECK(n == 0);

  gate.refused(Refusal::AccountNotPermitted, "192.0.2.1:5", "desk", "account 1002");
  gate.refused(Refusal::AccountNotPermitted, "192.0.2.1:5", "desk");
  gate.refused(Refusal::NotAuthenticated, "192.0.2.1:6", "");
  gate.refused(Refusal::UnknownCertificate, "192.0.2.1:7", "bad\nname");
  CHECK(gate.logon(loopback(), "desk", "wrong") == Refusal::BadKey);

  const auto counts = gate.refusals();
  CHECK(counts[static_cast<std::size_t>(Refusal::AccountNotPermitted)] == 2);
  CHECK(counts[static_cast<std::size_t>(Refusal::NotAuthenticated)] == 1);
  CHECK(counts[static_cast<std::size_t>(Refusal::UnknownCertificate)] == 1);
  CHECK(counts[static_cast<std::size_t>(Refusal::BadKey)] == 1);
  CHECK(counts[static_cast<std::size_t>(Refusal::TradeNotPermitted)] == 0);
  std::uint64_t total = 0;
  for (std::uint64_t n : counts) total += n;
  CHECK(total == 5);
}

TEST_CASE("every refusal has its own metrics label", "[unit][auth]") {
  CHECK(std::string(auth::refusal_label(Refusal::BadKey)) == "bad_key");
  CHECK(std::string(auth::refusal_label(Refusal::LockedOut)) == "locked_out");
  CHECK(std::string(auth::refusal_label(Refusal::KeyNeedsTls)) == "key_needs_tls");
  CHECK(std::string(auth::refusal_label(Refusal::NotAuthenticated)) == "not_authenticated");
  CHECK(std::string(auth::refusal_label(Refusal::UnknownCertificate)) == "unknown_certificate");
  CHECK(std::string(auth::refusal_label(Refusal::UnknownPrincipal)) == "unknown_principal");
  CHECK(std::string(auth::refusal_label(Refusal::AccountNotPermitted)) == "account_not_permitted");
  CHECK(std::string(auth::refusal_label(Refusal::TradeNotPermitted)) == "trade_not_permitted");
  CHECK(std::string(auth::refusal_label(Refusal::CreateNotPermitted)) == "create_not_permitted");
}

TEST_CASE("refusal lines are rate-limited; the first after a pause says how many were not logged",
          "[auth]") {
  auth::LogBudget budget;
  for (std::uint64_t i = 0; i < auth::LogBudget::kPerSecond; ++i) REQUIRE(budget.take() == 0);
  CHECK(budget.take() == auth::LogBudget::kSkip);
  CHECK(budget.take() == auth::LogBudget::kSkip);
  std::this_thread::sleep_for(std::chrono::milliseconds(1010));
  CHECK(budget.take() == 2);  // the two skipped, reported with the next line logged
  CHECK(budget.take() == 0);
}
