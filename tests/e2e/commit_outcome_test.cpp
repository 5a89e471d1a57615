// The group commit's record of which batch committed last (commit_marker), read back when a
// connection breaks during a commit: it decides between "committed after all" and "not
// applied", so a client is never told a committed request failed.
#include <chrono>
#include <string>

#include <catch2/catch.hpp>

#include "store/batch_writer.hpp"
#include "store/database.hpp"
#include "support/server_process.hpp"
#include "support/test_database.hpp"

using namespace testing_support;
using exchange::Decimal;

namespace {

store::Batch account_batch(const std::string& id, std::int64_t balance) {
  exchange::Effects fx;
  fx.accounts.push_back({id, Decimal::from_int(balance), Decimal::from_int(balance)});
  store::Batch batch;
  batch.merge(std::move(fx));
  return batch;
}

void fresh_schema() {
  ServerProcess server({"--reset"});  // applies schema.sql, empties the tables
  REQUIRE(server.stop() == 0);
}

}  // namespace

TEST_CASE("commit_marker names the last committed batch, and only that one", "[e2e]") {
  fresh_schema();
  store::Database db(database_url());
  db.prepare_writes();
  db.write(account_batch("990001", 5), {42, 7});
  CHECK(db.committed({42, 7}));
  CHECK_FALSE(db.committed({42, 6}));
  CHECK_FALSE(db.committed({41, 7}));

  // A write PostgreSQL refuses (a negative balance breaks a CHECK) stores nothing, not even
  // its mark.
  CHECK_THROWS(db.write(account_batch("990002", -1), {42, 8}));
  store::Database other(database_url());
  CHECK(other.committed({42, 7}));
  CHECK_FALSE(other.committed({42, 8}));
  CHECK(query_value("SELECT count(*) FROM accounts WHERE id = '990002'") == "0");
  CHECK(query_value("SELECT balance FROM accounts WHERE id = '990001'") == "5");
}

TEST_CASE("BatchWriter: a refused write is 'not applied', then the writer carries on", "[e2e]") {
  fresh_schema();
  store::BatchWriter writer(database_url(), std::chrono::seconds(2));
  writer.write(account_batch("990011", 7), 1);
  bool unknown = false, threw = false;
  try {
    writer.write(account_batch("990012", -1), 2);
  } catch (const store::CommitOutcomeUnknown&) {
    unknown = true;
  } catch (const std::exception&) {
    threw = true;
  }
  CHECK(threw);  // PostgreSQL answered: certainly not applied
  CHECK_FALSE(unknown);
  writer.write(account_batch("990013", 9), 3);  // on a fresh connection
  CHECK(query_value("SELECT string_agg(id, ',' ORDER BY id) FROM accounts") == "990011,990013");
}

TEST_CASE("BatchWriter: a database that cannot be reached is 'not applied', never 'unknown'",
          "[e2e]") {
  // Nothing was sent, so nothing can have committed: no need to ask.
  store::BatchWriter writer("postgresql://postgres@127.0.0.1:1/none?connect_timeout=1",
                            std::chrono::milliseconds(200));
  bool unknown = false, threw = false;
  try {
    writer.write(account_batch("990021", 1), 1);
  } catch (const store::CommitOutcomeUnknown&) {
    unknown = true;
  } catch (const std::exception&) {
    threw = true;
  }
  CHECK(threw);
  CHECK_FALSE(unknown);
}
