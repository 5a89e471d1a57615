#include "support/memory_store.hpp"

#include <algorithm>
#include <atomic>
#include <stdexcept>

#include "store/batcher.hpp"

namespace test {
namespace {

using Lock = std::unique_lock<std::mutex>;

leadership::Fenced fenced(const MemoryDatabase& db, leadership::FencingToken token) {
  return leadership::Fenced("another server took over the database (epoch " +
                            std::to_string(db.epoch) + "; ours was epoch " +
                            std::to_string(token.epoch) + ")");
}

class JournalWriter final : public store::JournalWriter {
 public:
  JournalWriter(MemoryDatabase& db, leadership::FencingToken token) : db_(db), token_(token) {}
  void write(const std::vector<store::JournalEntry>& entries, std::uint64_t) override {
    Lock lock(db_.mutex);
    if (!fenced_why_.empty()) throw leadership::Fenced(fenced_why_);
    if (abandoned_) throw std::runtime_error("the server is shutting down; not written");
    if (db_.epoch != token_.epoch) throw fenced(db_, token_);
    if (db_.fail_journal_writes > 0) {
      --db_.fail_journal_writes;
      throw std::runtime_error("injected: the journal write failed");
    }
    for (const auto& e : entries) {
      if (!db_.journal.empty() && e.seq <= db_.journal.rbegin()->first)
        throw std::logic_error("journal seq " + std::to_string(e.seq) + " out of order");
      db_.journal.emplace(e.seq, e);
    }
    ++db_.journal_batches;
    db_.changed.notify_all();
    if (db_.unknown_journal_writes > 0) {
      --db_.unknown_journal_writes;
      throw store::CommitOutcomeUnknown("injected: the commit's answer was lost");
    }
  }
  void fence(const std::string& why) override {
    Lock lock(db_.mutex);
    if (fenced_why_.empty()) fenced_why_ = why;
  }
  void abandon() override { abandoned_ = true; }
  Counts counts() const override { return {}; }

 private:
  MemoryDatabase& db_;
  leadership::FencingToken token_;
  std::string fenced_why_;
  std::atomic<bool> abandoned_{false};
};

class ProjectionWriter final : public store::ProjectionWriter {
 public:
  ProjectionWriter(MemoryDatabase& db, leadership::FencingToken token) : db_(db), token_(token) {}
  void write(const store::ProjectionRows& rows, std::int64_t through_seq,
             const Pace& pace) override {
    const auto started = std::chrono::steady_clock::now();
    Lock lock(db_.mutex);
    db_.changed.wait(lock, [&] { return !db_.hold_projection; });
    if (db_.epoch != token_.epoch) throw fenced(db_, token_);
    if (db_.fail_projection_writes > 0) {
      --db_.fail_projection_writes;
      throw std::runtime_error("injected: the projection write failed");
    }
    if (db_.position >= through_seq) return;
    // Told as PostgreSQL's writer tells it: every 250 rows of work, never after the last.
    const std::size_t work = rows.rows;
    lock.unlock();
    for (std::size_t sent = 250; pace && sent < work; sent += 250) pace(sent, work);
    lock.lock();
    // As PostgreSQL's write holds projection_position to its commit: a bump meanwhile fences.
    if (db_.epoch != token_.epoch) throw fenced(db_, token_);
    if (db_.position >= through_seq) return;
    store::ProjectionRows copy = rows;
    db_.projection.merge(std::move(copy));
    db_.position = through_seq;
    db_.projection_writes.push_back(
        {through_seq, rows.rows, std::chrono::steady_clock::now() - started});
    db_.changed.notify_all();
  }
  std::int64_t trim_journal(std::int64_t through_seq) override {
    Lock lock(db_.mutex);
    if (db_.epoch != token_.epoch) throw fenced(db_, token_);
    const std::int64_t through = std::min(through_seq, db_.position);
    std::int64_t deleted = 0;
    while (!db_.journal.empty() && db_.journal.begin()->first <= through) {
      db_.journal.erase(db_.journal.begin());
      ++deleted;
    }
    return deleted;
  }

 private:
  MemoryDatabase& db_;
  leadership::FencingToken token_;
};

bool is_open(const market::OrderRow& o) { return !o.canceled_at && o.open > market::Decimal(); }

// A row as PostgreSQL holds it and Database::load reads it back: every column, the limit and
// stop of a market order and of an order that is no stop as the engine wrote them (zero, none:
// NULL there), but not `revised`, which marks what a write must store and is not stored.
market::OrderRow as_stored(const market::OrderRow& o) {
  market::OrderRow row = o;
  row.revised = false;
  return row;
}

class Reader final : public store::JournalFollower {
 public:
  explicit Reader(MemoryDatabase& db) : db_(db) {}
  // As Database::load: open orders and their executions come back into memory; ids continue
  // after the largest stored ones.
  std::int64_t load(market::Engine& engine) override {
    Lock lock(db_.mutex);
    const store::ProjectionRows& p = db_.projection;
    for (const auto& s : p.symbols) engine.load_symbol(s);
    for (const auto& [id, a] : p.accounts) engine.load_account(a);
    for (const auto& [key, pos] : p.positions) engine.load_position(pos);
    std::map<market::OrderId, const market::OrderRow*> orders;
    for (const auto& [id, o] : p.orders) orders.emplace(id, &o);
    market::OrderId last_order = 0;
    for (const auto& [id, o] : orders) {
      last_order = id;
      if (is_open(*o)) engine.load_order(as_stored(*o));
    }
    std::map<std::int64_t, const market::ExecutionRow*> executions;
    for (const auto& e : p.executions) executions.emplace(e.id, &e);
    const auto open = [&](market::OrderId id) {
      auto it = orders.find(id);
      return it != orders.end() && is_open(*it->second);
    };
    for (const auto& [id, e] : executions)
      if (open(e->buy_order) || open(e->sell_order)) engine.load_execution(*e);
    engine.set_next_ids(last_order + 1, executions.empty() ? 1 : executions.rbegin()->first + 1,
                        p.next_priority);
    engine.finish_loading();
    return db_.position;
  }
  std::vector<store::JournalEntry> read_journal(std::int64_t after, std::int64_t limit) override {
    Lock lock(db_.mutex);
    return entries_after(after, limit);
  }
  Tail follow(std::int64_t after, std::int64_t limit) override {
    Lock lock(db_.mutex);
    return Tail{db_.last_seq(), db_.position, entries_after(after, limit)};
  }
  bool usable() const override { return true; }

 private:
  std::vector<store::JournalEntry> entries_after(std::int64_t after, std::int64_t limit) const {
    std::vector<store::JournalEntry> out;
    for (auto it = db_.journal.upper_bound(after);
         it != db_.journal.end() && static_cast<std::int64_t>(out.size()) < limit; ++it)
      out.push_back(it->second);
    return out;
  }
  MemoryDatabase& db_;
};

class ArchiveReader final : public store::ArchiveReader {
 public:
  explicit ArchiveReader(MemoryDatabase& db) : db_(db) {}
  std::map<market::OrderId, market::OrderStatus> find_orders(
      const std::string& account, const std::vector<market::OrderId>& ids) override {
    Lock lock(db_.mutex);
    std::map<market::OrderId, market::OrderStatus> found;
    for (market::OrderId id : ids) {
      auto it = db_.projection.orders.find(id);
      if (it == db_.projection.orders.end() || it->second.account != account) continue;
      found[id] = status_of(it->second);
    }
    return found;
  }
  bool usable() const override { return true; }

 private:
  market::OrderStatus status_of(const market::OrderRow& o) const {
    market::OrderStatus s;
    s.id = o.id;
    if (o.canceled_at) {
      s.canceled_shares = o.open;
      s.canceled_at = *o.canceled_at;
    } else {
      s.open = o.open;
    }
    std::map<std::int64_t, market::Fill> fills;
    for (const auto& e : db_.projection.executions)
      if (e.buy_order == o.id || e.sell_order == o.id) fills[e.id] = {e.shares, e.price, e.time};
    for (auto& [id, f] : fills) s.fills.push_back(f);
    return s;
  }
  MemoryDatabase& db_;
};

}  // namespace

std::vector<market::OrderRow> MemoryDatabase::order_rows(
    const std::vector<market::OrderId>& ids) const {
  std::lock_guard<std::mutex> lock(mutex);
  std::map<market::OrderId, market::OrderRow> found;
  for (market::OrderId id : ids) {
    auto it = projection.orders.find(id);
    if (it != projection.orders.end()) found.emplace(id, as_stored(it->second));
  }
  std::vector<market::OrderRow> rows;
  for (auto& [id, row] : found) rows.push_back(std::move(row));
  return rows;
}

void MemoryDatabase::bump_epoch() {
  std::lock_guard<std::mutex> lock(mutex);
  ++epoch;
}

std::int64_t MemoryDatabase::last_seq() const {
  return journal.empty() ? 0 : journal.rbegin()->first;  // as PostgreSQL's max(seq)
}

std::unique_ptr<store::JournalWriter> MemoryStore::journal_writer(leadership::FencingToken t) {
  return std::make_unique<JournalWriter>(db_, t);
}

std::unique_ptr<store::ProjectionWriter> MemoryStore::projection_writer(
    leadership::FencingToken t) {
  return std::make_unique<ProjectionWriter>(db_, t);
}

std::unique_ptr<store::StateReader> MemoryStore::state_reader() {
  {
    std::lock_guard<std::mutex> lock(db_.mutex);
    if (db_.fail_state_reads > 0) {
      --db_.fail_state_reads;
      throw std::runtime_error("injected: cannot connect");
    }
  }
  return std::make_unique<Reader>(db_);
}

std::unique_ptr<store::JournalFollower> MemoryStore::journal_follower() {
  {
    std::lock_guard<std::mutex> lock(db_.mutex);
    if (db_.fail_state_reads > 0) {
      --db_.fail_state_reads;
      throw std::runtime_error("injected: cannot connect");
    }
  }
  return std::make_unique<Reader>(db_);
}

std::unique_ptr<store::ArchiveReader> MemoryStore::archive_reader() {
  return std::make_unique<ArchiveReader>(db_);
}

}  // namespace test
