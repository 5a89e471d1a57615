// Reading writer_epoch: who may write this database now. Writes check it inside their own
// statements (journal_sql.cpp; projection_sql.cpp through projection_position's epoch, which
// the same bump moves); this is for saying who took over once one found it moved on.
#include <pqxx/pqxx>

#include "store/database.hpp"
#include "store/database_internal.hpp"

namespace store {

std::string WriterEpoch::describe() const {
  return "epoch " + std::to_string(epoch) + ", holder " + holder + ", since " + since;
}

WriterEpoch Database::writer_epoch() {
  return bounded("reading writer_epoch", timeout_, [&] {
    pqxx::nontransaction tx(*conn_);
    auto row = tx.exec1("SELECT epoch, holder, since::text FROM writer_epoch");
    return WriterEpoch{row[0].as<std::int64_t>(), row[1].c_str(), row[2].c_str()};
  });
}

leadership::Fenced Database::fenced(std::int64_t ours) {
  std::string who;
  try {
    who = writer_epoch().describe();
  } catch (const std::exception& e) {
    who = std::string("who it is could not be read: ") + e.what();
  }
  return leadership::Fenced("another server took over the database (" + who + "; ours was epoch " +
                            std::to_string(ours) + ")");
}

}  // namespace store
