// The in-memory store the unit tests of the durable core use (support/memory_store.hpp) keeps
// the contract PostgreSQL keeps (support/store_contract.hpp, e2e/store_contract_test.cpp).
#include "support/memory_store.hpp"

#include <catch2/catch.hpp>

#include "support/store_contract.hpp"

TEST_CASE("store contract: the in-memory fake (test::MemoryStore)") {
  test::MemoryDatabase db;
  test::MemoryStore store(db);
  test::check_store_contract(store, db.epoch, [&] {
    db.bump_epoch();
    return db.epoch;
  });
}
