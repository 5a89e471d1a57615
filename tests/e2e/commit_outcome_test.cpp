// The group commit's mark on each batch's last journal row, looked for when a connection
// breaks during a commit: it decides between "committed after all" and "not
// applied", so a client is never told a committed request failed. The group commit writes
// journal rows; a write PostgreSQL refuses here is one that repeats a journal seq.
#include <chrono>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <pqxx/pqxx>

#include "store/batch_writer.hpp"
#include "store/database.hpp"
#include "support/server_process.hpp"
#include "support/test_database.hpp"

using namespace testing_support;

namespace {

// A batch's journal of one entry: creating account `id`.
std::vector<store::JournalEntry> account_batch(std::int64_t seq, const std::string& id) {
  return {{seq, 1700000000, 1, "<create><account id=\"" + id + "\" balance=\"1\"/></create>", {}}};
}

// The projection's rows for the same request.
store::ProjectionRows account_rows(const std::string& id) {
  market::Effects fx;
  fx.accounts.push_back({id, market::Decimal::from_int(1), market::Decimal::from_int(1)});
  store::ProjectionRows rows;
  rows.merge(std::move(fx));
  return rows;
}

std::string journal_seqs() {
  return query_value("SELECT coalesce(string_agg(seq::text, ',' ORDER BY seq), '') FROM journal");
}

// A fresh schema; returns the writer epoch the server left (the writes below must carry it).
std::int64_t fresh_schema() {
  ServerProcess server({"--reset"});  // applies schema.sql, empties the tables
  REQUIRE(server.stop() == 0);
  return std::stoll(query_value("SELECT epoch FROM writer_epoch"));
}

}  // namespace

TEST_CASE("a batch's mark on its last journal row tells whether it committed", "[e2e]") {
  const std::int64_t epoch = fresh_schema();
  store::Database db(database_url());
  db.prepare_journal_write();
  auto batch = account_batch(1, "990001");
  batch.push_back(account_batch(2, "990003")[0]);
  db.write_journal(batch, {42, 7, 2}, epoch);
  CHECK(db.committed({42, 7, 2}));
  CHECK_FALSE(db.committed({42, 7, 1}));  // only the last row is marked
  CHECK_FALSE(db.committed({41, 7, 2}));  // another process's batch ending at the same seq
  CHECK_FALSE(db.committed({42, 8, 2}));  // a later batch of ours that reused the seqs
  CHECK(query_value("SELECT string_agg(coalesce(writer || '/' || batch, '-'), ',' ORDER BY seq) "
                    "FROM journal") == "-,42/7");

  // A write PostgreSQL refuses (seq 1 again breaks the primary key) stores nothing, not even
  // its mark.
  CHECK_THROWS(db.write_journal(account_batch(1, "990002"), {42, 8, 1}, epoch));
  store::Database other(database_url());
  CHECK(other.committed({42, 7, 2}));
  CHECK_FALSE(other.committed({42, 8, 1}));
  CHECK(journal_seqs() == "1,2");
  CHECK(query_value("SELECT count(*) FROM journal WHERE request LIKE '%990002%'") == "0");
  // Asking is a write (it waits for a synchronous standby like a commit) that changes nothing.
  CHECK(query_value("SELECT count(*) FROM journal WHERE writer IS NOT NULL") == "1");
}

TEST_CASE("BatchWriter: a refused write is 'not applied', then the writer carries on", "[e2e]") {
  const std::int64_t epoch = fresh_schema();
  store::BatchWriter writer(database_url(), leadership::FencingToken{epoch},
                            std::chrono::seconds(2));
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
                            leadership::FencingToken{1}, std::chrono::milliseconds(200));
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

TEST_CASE("a write under a superseded writer epoch is fenced: nothing stored, not even its mark",
          "[e2e]") {
  const std::int64_t epoch = fresh_schema();
  store::BatchWriter writer(database_url(), leadership::FencingToken{epoch},
                            std::chrono::seconds(2));
  writer.write(account_batch(1, "990031"), 1);
  {
    // What a new writer does once it holds the writer lock (query_value would not commit), as
    // a server of a version before projection_position.epoch does it: writer_epoch alone.
    auto conn = connect_database();
    pqxx::nontransaction(conn).exec("UPDATE writer_epoch SET epoch = epoch + 1, holder = 'test'");
  }
  CHECK_THROWS_AS(writer.write(account_batch(2, "990032"), 2), leadership::Fenced);
  // And for good: not even asked again.
  CHECK_THROWS_AS(writer.write(account_batch(3, "990033"), 3), leadership::Fenced);
  CHECK(journal_seqs() == "1");
  store::Database db(database_url());
  CHECK(query_value("SELECT count(*) FROM journal WHERE writer IS NOT NULL") == "1");
  CHECK(query_value("SELECT count(*) FROM journal WHERE batch = 2") == "0");
  // The projection is fenced by that too (its own fence, projection_position.epoch, is moved
  // by this version's bump: projector_test).
  db.prepare_writes();
  CHECK_THROWS_AS(db.project(account_rows("990034"), 2, epoch), leadership::Fenced);
  CHECK(query_value("SELECT count(*) FROM accounts WHERE id = '990034'") == "0");
  CHECK(query_value("SELECT seq FROM projection_position") == "0");
}
