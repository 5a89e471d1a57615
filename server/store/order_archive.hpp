#pragma once
// Answers <query> for orders the engine no longer keeps in memory (closed, durable, and older
// than the engine's cache of closed orders). They never change again, so reading them from
// PostgreSQL gives the same answer memory would have.
//
// Lookups never run on the thread that asks: that may be an event-loop thread, and one round
// trip there would stop every client. A fixed set of threads, each with its own connection
// (opened at its first lookup, reused, replaced once broken, closed by stop()), takes lookups
// from a queue in arrival order, so PostgreSQL sees at most `connections` of them at once however
// many clients ask. The queue is bounded: a lookup that finds it full is refused at once rather
// than waiting behind everyone. A lookup is one statement, however many orders it asks about.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "market/types.hpp"
#include "store/ports.hpp"

namespace store {

class OrderArchive {
 public:
  // Lookups that may wait per connection; beyond that they are refused (Answer::Kind::Busy)
  // rather than queue without bound behind a slow or silent database.
  static constexpr std::size_t kWaitingPerConnection = 64;

  struct Options {
    std::size_t connections = 2;  // threads, and so connections
  };
  // Opens a connection (a thread's, at its first lookup and after one broke). Throws if the
  // store cannot be reached.
  using Connect = std::function<std::unique_ptr<ArchiveReader>()>;

  struct Answer {
    enum class Kind {
      Found,   // `orders` holds the asked-for orders that belong to the account
      Busy,    // refused: too many lookups were waiting
      Failed,  // PostgreSQL could not be read, or the archive has stopped; `error` says why
    };
    Kind kind = Kind::Found;
    std::map<market::OrderId, market::OrderStatus> orders;
    std::string error;
  };
  using Done = std::function<void(Answer)>;

  OrderArchive(Options options, Connect connect);
  ~OrderArchive();
  OrderArchive(const OrderArchive&) = delete;
  OrderArchive& operator=(const OrderArchive&) = delete;

  // Reads the statuses of `ids` that belong to `account` on an archive thread and calls `done`
  // there; if the lookup is refused (Busy, or Failed after stop()), calls it at once on this
  // thread. Thread-safe.
  void find(std::string account, std::vector<market::OrderId> ids, Done done);
  // Answers what is queued, then closes the connections and joins the threads; later lookups
  // are refused. Idempotent.
  void stop();
  // A shutdown's grace period is over: lookups not yet started fail at once instead of waiting
  // for PostgreSQL (the statements running are cut off by Watchdog::fire_all). Thread-safe.
  void abandon() { abandoned_.store(true); }

  struct Counts {
    std::uint64_t statements = 0;  // lookups sent to PostgreSQL (retries included)
    std::uint64_t orders = 0;      // ids read by successful lookups
    std::uint64_t refused = 0;     // lookups refused (Busy)
    std::size_t waiting = 0;       // lookups queued now
    std::size_t connected = 0;     // connections open now
  };
  Counts counts() const;
  std::size_t max_waiting() const { return max_waiting_; }

 private:
  struct Lookup {
    std::string account;
    std::vector<market::OrderId> ids;
    Done done;
  };
  void run();
  // One lookup on this thread's connection `db`, which it opens or replaces as needed.
  Answer look_up(std::unique_ptr<ArchiveReader>& db, const Lookup& lookup);
  std::unique_ptr<ArchiveReader> connect();
  void drop(std::unique_ptr<ArchiveReader>& db);

  const Options options_;
  Connect connect_;
  const std::size_t max_waiting_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Lookup> queue_;
  bool stopping_ = false;
  std::atomic<bool> abandoned_{false};
  std::atomic<std::uint64_t> statements_{0}, orders_{0}, refused_{0};
  std::atomic<std::size_t> connected_{0};
  std::vector<std::thread> threads_;
};

}  // namespace store
