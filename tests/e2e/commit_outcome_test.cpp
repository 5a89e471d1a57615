// The group commit's record of which batch committed last (commit_marker), read back when a
// connection breaks during a commit: it decides between "committed after all" and "not
// applied", so a client is never told a committed request failed. The group commit writes
// journal rows; a write PostgreSQL refuses here is one that repeats a journal seq.
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

// A batch of one journal entry: creating account `id`.
store::Batch account_batch(std::int64_t seq, const std::string& id) {
  exchange::Effects fx;
  fx.accounts.push_back({id, Decimal::from_int(1), Decimal::from_int(1)});
  store::Batch batch;
  batch.journal.push_back(
      {seq, 1700000000, 1, "<create><account id=\"" + id + "\" balance=\"1\"/></create>", {}});
  batch.merge(std::move(fx));
  return batch;
}

std::string journal_seqs() {
  return query_value("SELECT coalesce(string_agg(seq::text, ',' ORDER BY seq), '') FROM journal");
}

void fresh_schema() {
  ServerProcess server({"--reset"});  // applies schema.sql, empties the tables
  REQUIRE(server.stop() == 0);
}

}  // namespace

TEST_CASE("commit_marker names the last committed batch, and only that one", "[e2e]") {
  fresh_schema();
  store::Database db(database_url());
  db.prepare_journal_write();
  db.write_journal(account_batch(1, "990001"), {42, 7});
  CHECK(db.committed({42, 7}));
  CHECK_FALSE(db.committed({42, 6}));
  CHECK_FALSE(db.committed({41, 7}));

  // A write PostgreSQL refuses (seq 1 again breaks the primary key) stores nothing, not even
  // its mark.
  CHECK_THROWS(db.write_journal(account_batch(1, "990002"), {42, 8}));
  store::Database other(database_url());
  CHECK(other.committed({42, 7}));
  CHECK_FALSE(other.committed({42, 8}));
  CHECK(journal_seqs() == "1");
  CHECK(query_value("SELECT count(*) FROM journal WHERE request LIKE '%990002%'") == "0");
}

TEST_CASE("BatchWriter: a refused write is 'not applied', then the writer carries on", "[e2e]") {
  fresh_schema();
  store::BatchWriter writer(database_url(), std::chrono::seconds(2));
  writer.write(account_batch(1, "990011"), 1);
  bool unknown = false, threw = false;
  try {
    writer.write(account_batch(1, "990012"), 2);
  } catch (const store::CommitOutcomeUnknown&) {
    unknown = true;
  } catch (const std::exception&) {
    threw = true;
  }
  CHECK(threw);  // PostgreSQL answered: certainly not applied
  CHECK_FALSE(unknown);
  writer.write(account_batch(2, "990013"), 3);  // on a fresh connection
  CHECK(journal_seqs() == "1,2");
  CHECK(query_value("SELECT count(*) FROM journal WHERE request LIKE '%990012%'") == "0");
}

TEST_CASE("BatchWriter: a database that cannot be reached is 'not applied', never 'unknown'",
          "[e2e]") {
  // Nothing was sent, so nothing can have committed: no need to ask.
  store::BatchWriter writer("postgresql://postgres@127.0.0.1:1/none?connect_timeout=1",
                            std::chrono::milliseconds(200));
  bool unknown = false, threw = false;
  try {
    writer.write(account_batch(1, "990021"), 1);
  } catch (const store::CommitOutcomeUnknown&) {
    unknown = true;
  } catch (const std::exception&) {
    threw = true;
  }
  CHECK(threw);
  CHECK_FALSE(unknown);
}
