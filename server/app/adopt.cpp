// A standby becoming the active server (exchange-server --standby, app/standby.hpp): instead of
// loading the projection and replaying the journal after it, the durable engine takes the state
// the standby kept up to date, which is the state that load would build now.
#include <mutex>

#include "app/durable_engine.hpp"
#include "app/standby.hpp"

namespace app {

void DurableEngine::adopt(Followed&& state) {
  projector_.start();
  std::unique_lock<boost::shared_mutex> lock(engine_lock_);
  engine_ = std::move(state.engine);
  closed_ = std::move(state.closed);
  // What the old leader's projector did not write, this one writes, as after a restart's
  // replay: from the stored position on.
  projector_.set_projected(state.projected_seq);
  for (auto& chunk : state.unprojected)
    projector_.enqueue(std::move(chunk.effects), chunk.through_seq);
  batcher_.set_next_seq(state.last_seq + 1);
}

}  // namespace app
