#include "store/batch_writer.hpp"

#include <chrono>
#include <stdexcept>
#include <thread>

#include "app/log.hpp"

namespace store {

void BatchWriter::write(const Batch& batch) {
  if (!db_) {
    db_ = std::make_unique<Database>(conninfo_);
    db_->prepare_writes();
  }
  try {
    db_->write(batch);
  } catch (...) {
    db_.reset();  // whatever broke, the next batch gets a new connection
    throw;
  }
}

std::unique_ptr<Database> connect_with_retry(const std::string& conninfo, int seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  for (int attempt = 1;; ++attempt) {
    try {
      return std::make_unique<Database>(conninfo);
    } catch (const std::exception& e) {
      if (std::chrono::steady_clock::now() >= deadline)
        throw std::runtime_error(std::string(e.what()) + " (gave up after " +
                                 std::to_string(seconds) + " s; see --db-wait)");
      EXCHANGE_LOG(warn) << e.what() << "; retrying (attempt " << attempt << ")";
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  }
}

}  // namespace store
