// store::PgStore keeps the contract of the ports (support/store_contract.hpp) that the unit
// tests' in-memory fake keeps too (unit/memory_store_test.cpp).
#include "support/store_contract.hpp"

#include <chrono>
#include <string>

#include <catch2/catch.hpp>

#include "store/pg_store.hpp"
#include "support/server_process.hpp"
#include "support/test_database.hpp"

using namespace testing_support;

TEST_CASE("store contract: PostgreSQL (store::PgStore)", "[e2e]") {
  {
    ServerProcess server({"--reset"});  // the schema, empty
    REQUIRE(server.stop() == 0);
  }
  const std::int64_t epoch = std::stoll(query_value_now("SELECT epoch FROM writer_epoch"));
  store::PgStore store(database_url(), std::chrono::seconds(5));
  test::check_store_contract(store, epoch, [] {
    // What a new writer's WriterLock::begin_epoch does to the rows that fence.
    return std::stoll(query_value_now(
        "WITH bumped AS (UPDATE writer_epoch SET epoch = epoch + 1 RETURNING epoch), "
        "leased AS (UPDATE writer_lease SET epoch = (SELECT epoch FROM bumped)), "
        "fenced AS (UPDATE projection_position SET epoch = (SELECT epoch FROM bumped)) "
        "SELECT epoch FROM bumped"));
  });
}
