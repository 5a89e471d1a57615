#include "store/batch_writer.hpp"

#include <algorithm>
#include <chrono>
#include <random>
#include <stdexcept>
#include <thread>

#include "util/log.hpp"

namespace store {

namespace {

std::int64_t random_writer_id() {
  std::random_device rd;
  auto id = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  return static_cast<std::int64_t>(id >> 1) + 1;  // positive, never the initial 0
}

}  // namespace

BatchWriter::BatchWriter(std::string conninfo, leadership::FencingToken token,
                         std::chrono::milliseconds resolve_for, std::chrono::milliseconds timeout)
    : conninfo_(std::move(conninfo)),
      epoch_(token.epoch),
      resolve_for_(resolve_for),
      timeout_(timeout),
      writer_id_(random_writer_id()) {}

void BatchWriter::fence(const std::string& why) {
  std::lock_guard<std::mutex> lock(fenced_mutex_);
  if (fenced_.empty()) fenced_ = why;
}

void BatchWriter::write(const std::vector<JournalEntry>& entries, std::uint64_t sequence) {
  // The last entry carries the mark. A batch with no entry is a read's proof (Batcher): the
  // statement only checks the writer epoch, FOR SHARE, and commits.
  const CommitMark mark{writer_id_, static_cast<std::int64_t>(sequence),
                        entries.empty() ? 0 : entries.back().seq};
  {
    std::lock_guard<std::mutex> lock(fenced_mutex_);
    if (!fenced_.empty()) throw leadership::Fenced(fenced_);
  }
  if (abandoned_) throw std::runtime_error("the server is shutting down; not written");
  bool connected = false;
  try {
    if (!db_) {
      db_ = std::make_unique<Database>(conninfo_, timeout_);
      // Named, so pg_stat_activity (and a profile of PostgreSQL) tells the group commit's
      // backend from the projector's.
      db_->set_application_name("exchange-commit");
      db_->prepare_journal_write();
      backend_ = db_->backend();
      if (connections_++ > 0) ++reconnects_;
    }
    connected = true;
    db_->write_journal(entries, mark, epoch_);
    // The watchdog may have fired just as the commit returned: the next batch reconnects.
    if (!db_->usable()) db_.reset();
  } catch (const leadership::Fenced& e) {
    // PostgreSQL answered, and the statement wrote nothing: not an unknown outcome.
    fence(e.what());
    db_.reset();
    throw;
  } catch (const std::exception& e) {
    db_.reset();  // whatever broke, the next batch gets a new connection
    // Not even connected: nothing was sent, so nothing can have committed.
    if (!connected) throw;
    ++broken_commits_;
    if (entries.empty()) throw;  // a proof: nothing to look for, it simply proved nothing
    if (!committed_after_all(mark, backend_, e.what())) throw;
    EXCHANGE_LOG(warn) << "batch " << sequence << ": the connection broke (" << e.what()
                       << ") but the commit went through";
  }
}

bool BatchWriter::committed_after_all(const CommitMark& mark, const Backend& old,
                                      const std::string& failure) {
  auto deadline = std::chrono::steady_clock::now() + resolve_for_;
  std::string last_error;
  for (int attempt = 1;; ++attempt) {
    if (abandoned_)
      throw CommitOutcomeUnknown(failure +
                                 "; the server is shutting down, so whether it "
                                 "committed was not asked");
    try {
      // A fresh connection, bounded like every other: the broken one is never asked again.
      Database db(conninfo_, timeout_);
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (!db.end_backend(old, std::max(left, std::chrono::milliseconds(100))))
        throw std::runtime_error("the old connection's backend " + std::to_string(old.pid) +
                                 " is still running");
      if (db.committed(mark)) return true;
      // Not committed, and perhaps because another writer's epoch was in place: then it is
      // not a failure to recover from by reloading.
      const WriterEpoch now = db.writer_epoch();
      if (now.epoch != epoch_) {
        leadership::Fenced fenced("another server took over the database (" + now.describe() +
                                  "; ours was epoch " + std::to_string(epoch_) + ")");
        fence(fenced.what());
        throw fenced;
      }
      return false;
    } catch (const leadership::Fenced&) {
      throw;
    } catch (const std::exception& e) {
      if (last_error != e.what() && std::chrono::steady_clock::now() < deadline)
        EXCHANGE_LOG(warn) << "asking whether batch " << mark.batch << " committed: " << e.what()
                           << "; retrying";
      last_error = e.what();
      if (std::chrono::steady_clock::now() >= deadline)
        throw CommitOutcomeUnknown(failure + "; whether it committed is unknown: " + e.what());
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(attempt, 10) * 50));
    }
  }
}

std::unique_ptr<Database> connect_with_retry(const std::string& conninfo, int seconds,
                                             const util::StopFlag* stop,
                                             std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  std::string last_error;
  for (int attempt = 1;; ++attempt) {
    if (stop && stop->requested())
      throw std::runtime_error("shutting down before PostgreSQL could be reached" +
                               (last_error.empty() ? std::string() : " (" + last_error + ")"));
    try {
      return std::make_unique<Database>(conninfo, timeout);
    } catch (const std::exception& e) {
      if (std::chrono::steady_clock::now() >= deadline)
        throw std::runtime_error(std::string(e.what()) + " (gave up after " +
                                 std::to_string(seconds) + " s and " + std::to_string(attempt) +
                                 " attempts; see --db-wait)");
      if (last_error != e.what())
        EXCHANGE_LOG(warn) << e.what() << "; retrying every second (attempt " << attempt << ")";
      last_error = e.what();
      if (stop)
        stop->sleep_for(std::chrono::seconds(1));
      else
        std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  }
}

}  // namespace store
