#pragma once
// What happens when a group commit fails (PostgreSQL restarted, disk full, a bug caught by a
// CHECK): the requests that could have seen the lost batch get errors at once, the exchange
// answers "unavailable" instead of serving state the database does not have, and the engine is
// rebuilt from PostgreSQL as soon as it answers again. Memory and database never disagree.
#include <string>
#include <vector>

#include "app/request_handler.hpp"
#include "exchange/engine.hpp"
#include "store/batcher.hpp"
#include "store/projector.hpp"

namespace app {

class Recovery {
 public:
  Recovery(std::string conninfo, exchange::Engine& engine, RequestHandler& handler,
           store::Projector& projector)
      : conninfo_(std::move(conninfo)), engine_(engine), handler_(handler), projector_(projector) {}

  // The Batcher's RecoverFn; runs on its writer thread and returns once the engine is back.
  void operator()(store::Batcher& batcher, store::Ticket failed, store::Outcome outcome);

 private:
  std::string conninfo_;
  exchange::Engine& engine_;
  RequestHandler& handler_;
  store::Projector& projector_;
};

}  // namespace app
