// The journal's SQL: the reply path's only write (one row per mutating request, in one
// statement per group commit) and the reads of a start-up or reload replay.
#include <pqxx/pqxx>

#include "store/database.hpp"
#include "store/database_internal.hpp"

namespace store {
namespace {

// The batch's journal rows as parallel arrays, its last row (seq $9) stamped with the batch's
// mark, writer $5 and batch $6: one round trip, one transaction, and the mark tells a broken
// connection's outcome (Database::committed). Written only while writer_epoch is still ours ($7):
// `fence` takes the row FOR SHARE, so a bump (an UPDATE) waits for this commit, and a statement
// that comes after a bump (or waited for one: READ COMMITTED re-checks the updated row) finds no
// row and writes nothing. What it returns, 1 or 0, says which.
const char* kWriteJournal = R"SQL(
WITH fence AS MATERIALIZED (
  SELECT epoch FROM writer_epoch WHERE epoch = $7 FOR SHARE
), appended AS (
  INSERT INTO journal (seq, at, first_order_id, request, refused, writer, batch)
  SELECT s, a, f, r, x, CASE WHEN s = $9 THEN $5::bigint END, CASE WHEN s = $9 THEN $6::bigint END
  FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $8::text[]) AS e(s, a, f, r, x)
  WHERE EXISTS (SELECT FROM fence)
)
SELECT count(*) FROM fence
)SQL";

// Deletes projected journal entries, under the same fence as the writes.
const char* kTrimJournal = R"SQL(
WITH fence AS MATERIALIZED (
  SELECT epoch FROM writer_epoch WHERE epoch = $2 FOR SHARE
), trimmed AS (
  DELETE FROM journal
  WHERE seq <= least($1, (SELECT seq FROM projection_position)) AND EXISTS (SELECT FROM fence)
  RETURNING 1
)
SELECT (SELECT count(*) FROM fence), (SELECT count(*) FROM trimmed)
)SQL";

}  // namespace

void Database::prepare_journal_write() { conn_->prepare("write_journal", kWriteJournal); }

void Database::write_journal(const std::vector<JournalEntry>& entries, const CommitMark& mark,
                             std::int64_t epoch) {
  ArrayLiteral seq, at, first_order_id, request, refused;
  for (const JournalEntry& e : entries) {
    seq.add(e.seq);
    at.add(e.at);
    first_order_id.add(e.first_order_id);
    request.add(e.request);
    if (e.refused.empty())
      refused.add_null();
    else
      refused.add(e.refused);
  }
  // A single statement outside BEGIN/COMMIT is its own transaction.
  const bool ours = bounded("committing a batch", timeout_, [&] {
    pqxx::nontransaction tx(*conn_);
    return tx.exec_prepared1("write_journal", seq.done(), at.done(), first_order_id.done(),
                             request.done(), mark.writer, mark.batch, epoch, refused.done(),
                             mark.seq)[0]
               .as<std::int64_t>() == 1;
  });
  if (!ours) throw fenced(epoch);
}

std::vector<JournalEntry> Database::read_journal(std::int64_t after, std::int64_t limit) {
  return bounded("reading the journal", timeout_ * 10, [&] {
    pqxx::read_transaction tx(*conn_);
    std::vector<JournalEntry> out;
    auto rows = tx.exec_params(
        "SELECT seq, at, first_order_id, request, coalesce(refused, '') FROM journal "
        "WHERE seq > $1 ORDER BY seq LIMIT $2",
        after, limit);
    out.reserve(rows.size());
    for (const auto& row : rows)
      out.push_back({row[0].as<std::int64_t>(), row[1].as<std::int64_t>(),
                     row[2].as<std::int64_t>(), std::string(row[3].c_str(), row[3].size()),
                     row[4].c_str()});
    return out;
  });
}

std::int64_t Database::last_journal_seq() {
  return bounded("reading the journal's end", timeout_, [&] {
    pqxx::read_transaction tx(*conn_);
    return tx.exec1("SELECT coalesce(max(seq), 0) FROM journal")[0].as<std::int64_t>();
  });
}

std::int64_t Database::trim_journal(std::int64_t through_seq, std::int64_t epoch) {
  std::int64_t deleted = 0;
  const bool ours = bounded("trimming the journal", timeout_, [&] {
    pqxx::nontransaction tx(*conn_);
    // Never past the projection: those entries are all a restart has to rebuild from.
    auto row = tx.exec_params1(kTrimJournal, through_seq, epoch);
    deleted = row[1].as<std::int64_t>();
    return row[0].as<std::int64_t>() == 1;
  });
  if (!ours) throw fenced(epoch);
  return deleted;
}

void Database::set_application_name(const std::string& name) {
  bounded("setting application_name", timeout_, [&] {
    pqxx::nontransaction tx(*conn_);
    tx.exec("SET application_name TO " + tx.quote(name));
  });
}

}  // namespace store
