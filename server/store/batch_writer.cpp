#include "store/batch_writer.hpp"

#include <algorithm>
#include <chrono>
#include <random>
#include <stdexcept>
#include <thread>

#include "app/log.hpp"

namespace store {

namespace {

std::int64_t random_writer_id() {
  std::random_device rd;
  auto id = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  return static_cast<std::int64_t>(id >> 1) + 1;  // positive, never the initial 0
}

}  // namespace

BatchWriter::BatchWriter(std::string conninfo, std::chrono::milliseconds resolve_for)
    : conninfo_(std::move(conninfo)), resolve_for_(resolve_for), writer_id_(random_writer_id()) {}

void BatchWriter::write(const Batch& batch, std::uint64_t sequence) {
  const CommitMark mark{writer_id_, static_cast<std::int64_t>(sequence)};
  bool connected = false;
  try {
    if (!db_) {
      db_ = std::make_unique<Database>(conninfo_);
      db_->prepare_journal_write();
    }
    connected = true;
    db_->write_journal(batch, mark);
  } catch (const std::exception& e) {
    db_.reset();  // whatever broke, the next batch gets a new connection
    // Not even connected: nothing was sent, so nothing can have committed.
    if (!connected || !committed_after_all(mark, e.what())) throw;
    EXCHANGE_LOG(warn) << "batch " << sequence << ": the connection broke (" << e.what()
                       << ") but the commit went through";
  }
}

bool BatchWriter::committed_after_all(const CommitMark& mark, const std::string& failure) {
  auto deadline = std::chrono::steady_clock::now() + resolve_for_;
  for (int attempt = 1;; ++attempt) {
    try {
      Database db(conninfo_);
      return db.committed(mark);
    } catch (const std::exception& e) {
      if (std::chrono::steady_clock::now() >= deadline)
        throw CommitOutcomeUnknown(failure + "; whether it committed is unknown: " + e.what());
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(attempt, 10) * 50));
    }
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
