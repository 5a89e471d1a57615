// What a standby reads besides the journal entries themselves (app/standby.cpp): how far the
// journal and the projection have got.
#include <pqxx/pqxx>

#include "store/database.hpp"
#include "store/database_internal.hpp"

namespace store {

Database::JournalEnd Database::journal_end() {
  return bounded("reading the journal's end", timeout_, [&] {
    // One statement, one snapshot, one round trip (the standby asks every few milliseconds).
    pqxx::nontransaction tx(*conn_);
    auto row = tx.exec1(
        "SELECT (SELECT coalesce(max(seq), 0) FROM journal), "
        "(SELECT seq FROM projection_position)");
    return JournalEnd{row[0].as<std::int64_t>(), row[1].as<std::int64_t>()};
  });
}

}  // namespace store
