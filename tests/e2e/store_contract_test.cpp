// store::PgStore keeps the contract of the ports (support/store_contract.hpp) that the unit
// tests' in-memory fake keeps too (unit/memory_store_test.cpp).
#include "support/store_contract.hpp"

#include <chrono>
#include <string>

#include <catch2/catch.hpp>

#include "store/database.hpp"
#include "store/pg_store.hpp"
#include "support/server_process.hpp"
#include "support/test_database.hpp"

using namespace testing_support;

namespace {

// The schema, the tables empty; the writer epoch in force.
std::int64_t fresh_database() {
  {
    ServerProcess server({"--reset"});
    REQUIRE(server.stop() == 0);
  }
  return std::stoll(query_value_now("SELECT epoch FROM writer_epoch"));
}

}  // namespace

TEST_CASE("store contract: PostgreSQL (store::PgStore)", "[e2e]") {
  const std::int64_t epoch = fresh_database();
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

TEST_CASE("store contract: order types on PostgreSQL (store::PgStore)", "[e2e]") {
  const std::int64_t epoch = fresh_database();
  store::PgStore store(database_url(), std::chrono::seconds(5));
  store::Database db(database_url());
  test::check_order_types_contract(
      store, epoch, [&](const std::vector<market::OrderId>& ids) { return db.order_rows(ids); });
  // As SQL sees them: a market order's limit is NULL, a waiting stop's stop_price set.
  CHECK(query_value_now("SELECT limit_price IS NULL FROM orders WHERE id = 4") == "t");
  CHECK(query_value_now("SELECT stop_price FROM orders WHERE id = 5") == "9");
  CHECK(query_value_now("SELECT count(*) FROM orders WHERE stop_price IS NOT NULL") == "1");
}

TEST_CASE("store contract: loaded priorities and stops on PostgreSQL", "[e2e]") {
  const std::int64_t epoch = fresh_database();
  store::PgStore store(database_url(), std::chrono::seconds(5));
  test::check_loaded_priority_and_stops(store, epoch);
}

TEST_CASE("schema: a database from before issue 48 gets priority, stop_price, nullable limits",
          "[e2e]") {
  fresh_database();
  {
    // The orders table as it was: limit_price NOT NULL, no priority or stop_price; an open
    // order in it.
    auto conn = connect_database();
    pqxx::nontransaction tx(conn);
    tx.exec(
        "ALTER TABLE orders DROP COLUMN priority, DROP COLUMN stop_price, "
        "ALTER COLUMN limit_price SET NOT NULL");
    tx.exec("INSERT INTO symbols VALUES ('X')");
    tx.exec("INSERT INTO accounts VALUES ('1001', 970, 1000)");
    tx.exec(
        "INSERT INTO orders (id, account_id, symbol, amount, limit_price, open_amount, "
        "created_at) VALUES (41, '1001', 'X', 10, 3, 10, 1700000000)");
  }
  {
    ServerProcess server({});  // applies schema.sql, loads order 41
    REQUIRE(server.stop() == 0);
  }
  CHECK(query_value_now("SELECT attnotnull FROM pg_attribute "
                        "WHERE attrelid = 'orders'::regclass AND attname = 'limit_price'") == "f");
  CHECK(query_value_now("SELECT count(*) FROM pg_attribute WHERE attrelid = 'orders'::regclass "
                        "AND attname IN ('priority', 'stop_price') AND NOT attisdropped") == "2");
  store::Database db(database_url());
  const auto rows = db.order_rows({41});
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].priority == 41);  // NULL: its id
  CHECK(!rows[0].stop);
  CHECK(rows[0].limit == market::Decimal::from_int(3));
}
