#include "store/order_archive.hpp"

#include <algorithm>

#include "util/log.hpp"

namespace store {

OrderArchive::OrderArchive(Options options, Connect connect)
    : options_(std::move(options)),
      connect_(std::move(connect)),
      max_waiting_(kWaitingPerConnection * std::max<std::size_t>(1, options_.connections)) {
  for (std::size_t i = 0; i < std::max<std::size_t>(1, options_.connections); ++i)
    threads_.emplace_back([this] { run(); });
}

OrderArchive::~OrderArchive() { stop(); }

void OrderArchive::find(std::string account, std::vector<market::OrderId> ids, Done done) {
  Answer refused;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stopping_ && queue_.size() < max_waiting_) {
      queue_.push_back({std::move(account), std::move(ids), std::move(done)});
      wake_.notify_one();
      return;
    }
    if (stopping_) {
      refused.kind = Answer::Kind::Failed;
      refused.error = "the order archive has stopped";
    } else {
      refused.kind = Answer::Kind::Busy;
      refused_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  done(std::move(refused));
}

void OrderArchive::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& thread : threads_)
    if (thread.joinable()) thread.join();
}

OrderArchive::Counts OrderArchive::counts() const {
  Counts c;
  c.statements = statements_.load(std::memory_order_relaxed);
  c.orders = orders_.load(std::memory_order_relaxed);
  c.refused = refused_.load(std::memory_order_relaxed);
  c.connected = connected_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mutex_);
  c.waiting = queue_.size();
  return c;
}

void OrderArchive::run() {
  // This thread's connection: opened at its first lookup, closed when the thread ends.
  std::unique_ptr<ArchiveReader> db;
  for (;;) {
    Lookup lookup;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) break;  // stopping, and every queued lookup has been answered
      lookup = std::move(queue_.front());
      queue_.pop_front();
    }
    Answer answer;
    if (abandoned_.load()) {
      answer.kind = Answer::Kind::Failed;
      answer.error = "the server is shutting down";
    } else {
      answer = look_up(db, lookup);
    }
    try {
      lookup.done(std::move(answer));
    } catch (const std::exception& e) {
      EXCHANGE_LOG(error) << "answering an archived-order lookup failed: " << e.what();
    }
  }
  drop(db);
}

OrderArchive::Answer OrderArchive::look_up(std::unique_ptr<ArchiveReader>& db,
                                           const Lookup& lookup) {
  Answer answer;
  // A connection idle since its last lookup may have been closed meanwhile (a PostgreSQL
  // restart, idle_session_timeout, an administrator): a lookup that finds it broken is retried
  // once on a fresh connection. Not after a timeout: the database is silent, and the request
  // has waited long enough.
  for (bool retried = false;; retried = true) {
    const bool reused = db != nullptr;
    try {
      if (!db) db = connect();
      statements_.fetch_add(1, std::memory_order_relaxed);
      answer.orders = db->find_orders(lookup.account, lookup.ids);
      orders_.fetch_add(lookup.ids.size(), std::memory_order_relaxed);
      return answer;
    } catch (const std::exception& e) {
      const bool broke = db && !db->usable();
      if (broke) drop(db);
      const bool timed_out = dynamic_cast<const DatabaseTimeout*>(&e) != nullptr;
      if (!(reused && broke && !retried && !timed_out)) {
        answer.kind = Answer::Kind::Failed;
        answer.error = e.what();
        return answer;
      }
      EXCHANGE_LOG(info) << "archive connection broke while idle (" << e.what()
                         << "); retrying on a fresh one";
    }
  }
}

std::unique_ptr<ArchiveReader> OrderArchive::connect() {
  auto db = connect_();
  connected_.fetch_add(1, std::memory_order_relaxed);
  return db;
}

void OrderArchive::drop(std::unique_ptr<ArchiveReader>& db) {
  if (!db) return;
  db.reset();
  connected_.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace store
