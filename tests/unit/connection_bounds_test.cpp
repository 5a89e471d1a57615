// The libpq parameters the server adds so that no wait on PostgreSQL is unbounded, in both
// forms of connection string, never overriding what the operator wrote.
#include "store/connection_bounds.hpp"

#include <chrono>
#include <string>

#include <catch2/catch.hpp>

using store::bounds_for_timeout;
using store::with_connection_bounds;

namespace {

store::ConnectionBounds defaults() { return bounds_for_timeout(std::chrono::milliseconds(5000)); }

const std::string kAll =
    "connect_timeout=5 keepalives=1 keepalives_idle=5 keepalives_interval=1 keepalives_count=3 "
    "tcp_user_timeout=5000";

}  // namespace

TEST_CASE("bounds follow the database timeout", "[unit]") {
  auto b = defaults();
  CHECK(b.connect_timeout_s == 5);
  CHECK(b.keepalives_idle_s == 5);
  CHECK(b.keepalives_interval_s == 1);
  CHECK(b.keepalives_count == 3);
  CHECK(b.tcp_user_timeout_ms == 5000);
  // libpq treats a connect_timeout below 2 s as 2 s; say so rather than pretend.
  auto fast = bounds_for_timeout(std::chrono::milliseconds(300));
  CHECK(fast.connect_timeout_s == 2);
  CHECK(fast.keepalives_idle_s == 1);
  CHECK(fast.tcp_user_timeout_ms == 300);
  CHECK(bounds_for_timeout(std::chrono::milliseconds(1500)).connect_timeout_s == 2);
  CHECK(bounds_for_timeout(std::chrono::milliseconds(7200)).connect_timeout_s == 8);
}

TEST_CASE("key=value strings get every missing bound appended", "[unit]") {
  CHECK(with_connection_bounds("host=db dbname=x", defaults()) == "host=db dbname=x " + kAll);
  CHECK(with_connection_bounds("", defaults()) == kAll);  // all from the environment
  CHECK(with_connection_bounds("dbname=x ", defaults()) == "dbname=x " + kAll);
}

TEST_CASE("key=value strings keep the operator's own settings", "[unit]") {
  auto out = with_connection_bounds("host=db connect_timeout = 30 keepalives=0", defaults());
  CHECK(out ==
        "host=db connect_timeout = 30 keepalives=0 keepalives_idle=5 keepalives_interval=1 "
        "keepalives_count=3 tcp_user_timeout=5000");
  // A quoted value that merely contains a key's name does not count as setting it.
  auto quoted = with_connection_bounds("password='a tcp_user_timeout=1 \\' b' host=db", defaults());
  CHECK(quoted.find("tcp_user_timeout=5000") != std::string::npos);
  CHECK(quoted.rfind("password='a tcp_user_timeout=1 \\' b' host=db ", 0) == 0);
}

TEST_CASE("URIs get the bounds as query parameters", "[unit]") {
  const std::string q =
      "connect_timeout=5&keepalives=1&keepalives_idle=5&keepalives_interval=1&keepalives_count=3"
      "&tcp_user_timeout=5000";
  CHECK(with_connection_bounds("postgresql://u@h:5432/db", defaults()) ==
        "postgresql://u@h:5432/db?" + q);
  CHECK(with_connection_bounds("postgres://h/db?sslmode=disable", defaults()) ==
        "postgres://h/db?sslmode=disable&" + q);
  CHECK(with_connection_bounds("postgresql://h/db?", defaults()) == "postgresql://h/db?" + q);
  CHECK(with_connection_bounds("postgresql://h/db?connect_timeout=1&tcp_user_timeout=9",
                               defaults()) ==
        "postgresql://h/db?connect_timeout=1&tcp_user_timeout=9&keepalives=1&keepalives_idle=5"
        "&keepalives_interval=1&keepalives_count=3");
  // A key's name inside another key's value is not that key.
  CHECK(with_connection_bounds("postgresql://h/db?application_name=keepalives", defaults())
            .find("&keepalives=1") != std::string::npos);
}

// What ha-cluster.sh prints for a Patroni cluster: several hosts, libpq picking the writable
// one. The bounds are one set of query parameters for the whole string (libpq applies
// connect_timeout to each host in turn), and the hosts are left exactly as written.
TEST_CASE("multi-host connection strings get the bounds once, hosts untouched", "[unit]") {
  const std::string q =
      "connect_timeout=5&keepalives=1&keepalives_idle=5&keepalives_interval=1&keepalives_count=3"
      "&tcp_user_timeout=5000";
  const std::string ha =
      "postgresql://postgres@127.0.0.1:25520,127.0.0.1:25521/exchange"
      "?target_session_attrs=read-write";
  CHECK(with_connection_bounds(ha, defaults()) == ha + "&" + q);
  // No path and no query: libpq accepts the parameters right after the host list.
  CHECK(with_connection_bounds("postgresql://h1:5432,h2:5433", defaults()) ==
        "postgresql://h1:5432,h2:5433?" + q);
  // IPv6 hosts in brackets, and a port that is not the last host's.
  CHECK(with_connection_bounds("postgresql://[::1]:5432,db2/x?connect_timeout=9", defaults()) ==
        "postgresql://[::1]:5432,db2/x?connect_timeout=9&keepalives=1&keepalives_idle=5"
        "&keepalives_interval=1&keepalives_count=3&tcp_user_timeout=5000");
  // The key=value form lists hosts and ports with commas.
  CHECK(with_connection_bounds("host=h1,h2 port=5432,5433 target_session_attrs=read-write",
                               defaults()) ==
        "host=h1,h2 port=5432,5433 target_session_attrs=read-write " + kAll);
}
