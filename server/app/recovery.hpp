#pragma once
// What happens when a group commit fails (PostgreSQL restarted or went silent, disk full, a bug
// caught by a CHECK): the requests that could have seen the lost batch get errors at once, the
// exchange answers "unavailable" instead of serving state the database does not have, and the
// engine is rebuilt from PostgreSQL as soon as it answers again. Memory and database never
// disagree. A shutdown request ends the rebuilding loop: the server then stays unavailable
// until it exits.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "app/request_handler.hpp"
#include "exchange/engine.hpp"
#include "store/batcher.hpp"
#include "store/database.hpp"
#include "store/projector.hpp"
#include "store/stop_flag.hpp"

namespace app {

class Recovery {
 public:
  Recovery(std::string conninfo, exchange::Engine& engine, RequestHandler& handler,
           store::Projector& projector, const store::StopFlag& stop,
           std::chrono::milliseconds timeout = store::kDefaultDbTimeout)
      : conninfo_(std::move(conninfo)),
        engine_(engine),
        handler_(handler),
        projector_(projector),
        stop_(stop),
        timeout_(timeout) {}

  // The Batcher's RecoverFn; runs on its writer thread and returns once the engine is back
  // (or a shutdown was requested).
  void operator()(store::Batcher& batcher, store::Ticket failed, store::Outcome outcome);

  // Rebuilds completed so far.
  std::uint64_t reloads() const { return reloads_.load(); }

 private:
  std::string conninfo_;
  exchange::Engine& engine_;
  RequestHandler& handler_;
  store::Projector& projector_;
  const store::StopFlag& stop_;
  std::chrono::milliseconds timeout_;
  std::atomic<std::uint64_t> reloads_{0};
};

}  // namespace app
