#pragma once
// Answers <query> for orders the engine no longer keeps in memory (closed, durable, and
// older than the engine's cache of closed orders). They never change again, so reading them
// from PostgreSQL gives the same answer memory would have. A small pool of connections lets
// several workers look up at once.
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "exchange/types.hpp"
#include "store/database.hpp"

namespace store {

class OrderArchive {
 public:
  // `timeout` bounds each lookup (a silent database fails it instead of hanging the worker).
  explicit OrderArchive(std::string conninfo, std::chrono::milliseconds timeout = kDefaultDbTimeout)
      : conninfo_(std::move(conninfo)), timeout_(timeout) {}

  // The stored status of `id` if it belongs to `account`; nullopt otherwise. Throws if the
  // database cannot be reached.
  std::optional<exchange::OrderStatus> find(const std::string& account, exchange::OrderId id);

 private:
  std::unique_ptr<Database> take();
  void give_back(std::unique_ptr<Database> db);

  std::string conninfo_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Database>> idle_;
};

}  // namespace store
