#pragma once
// The narrow ways the durable core (app::DurableEngine, store::Projector, the archive, recovery
// and the standby) reaches its store. Each has a PostgreSQL implementation (store/pg_store.hpp)
// and an in-memory fake for unit tests (tests/support/memory_store.hpp); both pass the same
// contract (tests/support/store_contract.hpp).
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "leadership/fencing.hpp"
#include "market/engine.hpp"
#include "store/journal.hpp"
#include "store/projection_rows.hpp"

namespace store {

// A call got no answer within its limit: the store (or the network to it) went silent. What it
// wrote, if anything, is as unknown as after any broken connection.
struct DatabaseTimeout : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What bounds each call on the store by default (--db-timeout-ms).
constexpr std::chrono::milliseconds kDefaultDbTimeout{5000};

// The group commit's writer: each batch's journal entries, durably and in order.
class JournalWriter {
 public:
  virtual ~JournalWriter() = default;
  // Returns once batch number `sequence` is committed. Throws CommitOutcomeUnknown when it
  // cannot tell, leadership::Fenced once another writer took over (then always); any other
  // exception means nothing of the batch is stored.
  virtual void write(const std::vector<JournalEntry>& entries, std::uint64_t sequence) = 0;
  // Every later write throws Fenced with `why`. Thread-safe.
  virtual void fence(const std::string& why) = 0;
  // A shutdown's grace period is over: nothing more is written. Thread-safe.
  virtual void abandon() = 0;
  struct Counts {
    std::uint64_t broken_commits = 0;  // commits whose connection broke or timed out
    std::uint64_t reconnects = 0;      // new connections after the first
  };
  virtual Counts counts() const = 0;
};

// The projector's writes: merged rows and the position they bring the tables to, in one
// transaction. Pacing is the Projector's: `pace` is told the work sent and the work in all.
class ProjectionWriter {
 public:
  using Pace = std::function<void(std::size_t work_sent, std::size_t work_in_all)>;
  virtual ~ProjectionWriter() = default;
  // On the projector's thread as it starts: opens what the writes need (tests and operators
  // look for the projector's session). A failure is retried at the first write.
  virtual void warm_up() {}
  // Idempotent (a write whose seq the position has reached is skipped). Throws
  // leadership::Fenced (nothing written) once the token is not the current epoch; any other
  // exception: nothing written, and the next call starts afresh.
  virtual void write(const ProjectionRows& rows, std::int64_t through_seq, const Pace& pace) = 0;
  // Deletes the projected journal entries up to `through_seq`; how many went. Throws as write.
  virtual std::int64_t trim_journal(std::int64_t through_seq) = 0;
};

// What a (re)start reads: the projection, then the journal after it.
class StateReader {
 public:
  virtual ~StateReader() = default;
  // Fills an empty engine with the projection; the journal seq it reflects.
  virtual std::int64_t load(market::Engine& engine) = 0;
  // Up to `limit` journal entries with seq > `after`, in seq order.
  virtual std::vector<JournalEntry> read_journal(std::int64_t after, std::int64_t limit) = 0;
};

// A standby's reads: the state, and the journal's end with the entries after `after`.
class JournalFollower : public StateReader {
 public:
  struct Tail {
    std::int64_t last_seq = 0;       // the journal's largest seq
    std::int64_t projected_seq = 0;  // projection_position.seq
    std::vector<JournalEntry> entries;
  };
  // From one snapshot.
  virtual Tail follow(std::int64_t after, std::int64_t limit) = 0;
  // False once a call broke: open a new one.
  virtual bool usable() const = 0;
};

// The archive: orders no longer in memory.
class ArchiveReader {
 public:
  virtual ~ArchiveReader() = default;
  // The stored status of each of `ids` that belongs to `account` (the others are absent).
  virtual std::map<market::OrderId, market::OrderStatus> find_orders(
      const std::string& account, const std::vector<market::OrderId>& ids) = 0;
  virtual bool usable() const = 0;
};

// Opens the ports: a connection each (PostgreSQL), or views of one in-memory store (the fake).
// Each throws if the store cannot be reached.
class Store {
 public:
  virtual ~Store() = default;
  virtual std::unique_ptr<JournalWriter> journal_writer(leadership::FencingToken token) = 0;
  virtual std::unique_ptr<ProjectionWriter> projection_writer(leadership::FencingToken token) = 0;
  virtual std::unique_ptr<StateReader> state_reader() = 0;
  virtual std::unique_ptr<JournalFollower> journal_follower() = 0;
  virtual std::unique_ptr<ArchiveReader> archive_reader() = 0;
};

}  // namespace store
