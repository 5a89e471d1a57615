#include "store/order_archive.hpp"

namespace store {

std::unique_ptr<Database> OrderArchive::take() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!idle_.empty()) {
      auto db = std::move(idle_.back());
      idle_.pop_back();
      return db;
    }
  }
  return std::make_unique<Database>(conninfo_, timeout_);
}

void OrderArchive::give_back(std::unique_ptr<Database> db) {
  std::lock_guard<std::mutex> lock(mutex_);
  idle_.push_back(std::move(db));
}

std::optional<exchange::OrderStatus> OrderArchive::find(const std::string& account,
                                                        exchange::OrderId id) {
  auto db = take();
  // A connection that failed mid-query (or was cut off by the watchdog) is dropped rather
  // than returned to the pool.
  auto status = db->find_order(account, id);
  if (db->usable()) give_back(std::move(db));
  return status;
}

}  // namespace store
