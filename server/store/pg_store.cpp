#include "store/pg_store.hpp"

#include "leadership/session_names.hpp"
#include "store/batch_writer.hpp"
#include "util/log.hpp"

namespace store {
namespace {

class PgProjectionWriter final : public ProjectionWriter {
 public:
  PgProjectionWriter(std::string conninfo, std::chrono::milliseconds timeout,
                     leadership::FencingToken token)
      : conninfo_(std::move(conninfo)), timeout_(timeout), token_(token) {}

  void warm_up() override {
    try {
      db();
    } catch (const std::exception& e) {
      db_.reset();
      EXCHANGE_LOG(warn) << "the projector cannot connect yet (retried at its first write): "
                         << e.what();
    }
  }

  void write(const ProjectionRows& rows, std::int64_t through_seq, const Pace& pace) override {
    run([&] { db().project(rows, through_seq, token_.epoch, pace); });
  }
  std::int64_t trim_journal(std::int64_t through_seq) override {
    std::int64_t deleted = 0;
    run([&] { deleted = db().trim_journal(through_seq, token_.epoch); });
    return deleted;
  }

 private:
  // Runs `call`; after a failure the connection is dropped and its backend ended next time.
  template <typename Call>
  void run(Call&& call) {
    try {
      call();
    } catch (const leadership::Fenced&) {
      db_.reset();
      throw;
    } catch (...) {
      if (db_ && backend_.pid != 0) end_backend_ = true;
      db_.reset();
      throw;
    }
  }
  Database& db() {
    if (db_) return *db_;
    db_ = std::make_unique<Database>(conninfo_, timeout_);
    db_->set_application_name(leadership::kProjectorSession);
    db_->prepare_writes();
    if (end_backend_) {
      // Until it is gone, the statement cut off may still be running (and holding locks).
      if (!db_->end_backend(backend_, timeout_))
        EXCHANGE_LOG(warn) << "the projector's previous backend (pid " << backend_.pid
                           << ") did not end within " << timeout_.count() << " ms";
      end_backend_ = false;
    }
    backend_ = db_->backend();
    return *db_;
  }

  std::string conninfo_;
  std::chrono::milliseconds timeout_;
  leadership::FencingToken token_;
  std::unique_ptr<Database> db_;
  Backend backend_;           // db_'s; ended once db_ failed
  bool end_backend_ = false;  // the previous connection failed: end backend_
};

class PgStateReader : public JournalFollower {
 public:
  PgStateReader(const std::string& conninfo, std::chrono::milliseconds timeout,
                const char* application_name = nullptr)
      : db_(conninfo, timeout) {
    if (application_name) db_.set_application_name(application_name);
  }
  std::int64_t load(market::Engine& engine) override { return db_.load(engine); }
  std::vector<JournalEntry> read_journal(std::int64_t after, std::int64_t limit) override {
    return db_.read_journal(after, limit);
  }
  Tail follow(std::int64_t after, std::int64_t limit) override {
    Database::JournalTail tail = db_.follow_journal(after, limit);
    return Tail{tail.end.last_seq, tail.end.projected_seq, std::move(tail.entries)};
  }
  bool usable() const override { return db_.usable(); }

 private:
  Database db_;
};

class PgArchiveReader final : public ArchiveReader {
 public:
  PgArchiveReader(const std::string& conninfo, std::chrono::milliseconds timeout)
      : db_(conninfo, timeout) {
    // Lets operators (and tests) tell the archive's connections in pg_stat_activity.
    db_.set_application_name("exchange-archive");
  }
  std::map<market::OrderId, market::OrderStatus> find_orders(
      const std::string& account, const std::vector<market::OrderId>& ids) override {
    return db_.find_orders(account, ids);
  }
  bool usable() const override { return db_.usable(); }

 private:
  Database db_;
};

}  // namespace

PgStore::PgStore(std::string conninfo, std::chrono::milliseconds timeout)
    : conninfo_(std::move(conninfo)), timeout_(timeout) {}

std::unique_ptr<JournalWriter> PgStore::journal_writer(leadership::FencingToken token) {
  return std::make_unique<BatchWriter>(conninfo_, token, timeout_, timeout_);
}

std::unique_ptr<ProjectionWriter> PgStore::projection_writer(leadership::FencingToken token) {
  return std::make_unique<PgProjectionWriter>(conninfo_, timeout_, token);
}

std::unique_ptr<StateReader> PgStore::state_reader() {
  return std::make_unique<PgStateReader>(conninfo_, timeout_);
}

std::unique_ptr<JournalFollower> PgStore::journal_follower() {
  // pg_stat_activity tells the follower's session from the others (and
  // scripts/takeover_bench.py counts its CPU by this name).
  return std::make_unique<PgStateReader>(conninfo_, timeout_, "exchange-standby");
}

std::unique_ptr<ArchiveReader> PgStore::archive_reader() {
  return std::make_unique<PgArchiveReader>(conninfo_, timeout_);
}

}  // namespace store
