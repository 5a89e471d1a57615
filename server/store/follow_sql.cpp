// What a standby reads (app/standby.cpp): how far the journal and the projection have got, and
// the entries it has not applied yet.
#include <pqxx/pqxx>

#include "store/database.hpp"
#include "store/database_internal.hpp"

namespace store {
namespace {

// One statement, so one snapshot and one round trip: the standby asks every few milliseconds,
// and under load each poll finds entries, so a separate question for the journal's end (and a
// read-only transaction around the read) would triple the statements PostgreSQL answers for it
// while the active server needs those cores. The LEFT JOIN keeps the end's one row when there
// is nothing new.
constexpr const char* kFollowJournal = R"SQL(
SELECT e.last_seq, e.projected_seq,
       j.seq, j.at, j.first_order_id, j.request, coalesce(j.refused, '')
FROM (SELECT (SELECT coalesce(max(seq), 0) FROM journal) AS last_seq,
             (SELECT seq FROM projection_position) AS projected_seq) e
LEFT JOIN LATERAL (SELECT seq, at, first_order_id, request, refused FROM journal
                   WHERE seq > $1 ORDER BY seq LIMIT $2) j ON true
ORDER BY j.seq
)SQL";

}  // namespace

Database::JournalTail Database::follow_journal(std::int64_t after, std::int64_t limit) {
  // As long as a read of the journal may take (up to `limit` entries).
  return bounded("following the journal", timeout_ * 10, [&] {
    pqxx::nontransaction tx(*conn_);
    auto rows = tx.exec_params(kFollowJournal, after, limit);
    JournalTail out;
    if (rows.empty()) return out;
    out.end = JournalEnd{rows[0][0].as<std::int64_t>(), rows[0][1].as<std::int64_t>()};
    if (rows[0][2].is_null()) return out;
    out.entries.reserve(rows.size());
    for (const auto& row : rows)
      out.entries.push_back({row[2].as<std::int64_t>(), row[3].as<std::int64_t>(),
                             row[4].as<std::int64_t>(), std::string(row[5].c_str(), row[5].size()),
                             row[6].c_str()});
    return out;
  });
}

}  // namespace store
