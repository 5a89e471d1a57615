#pragma once
// Rebuilding the engine: the projection (the SQL tables as of some journal seq), then the
// journal after that seq, replayed request by request exactly as the live server applied them
// (same payload, same `now`, same order). The engine is deterministic, so this yields the
// state the server had; each entry's first_order_id checks that it does.
#include <cstdint>

#include "app/closed_orders.hpp"
#include "market/effects.hpp"
#include "market/engine.hpp"
#include "protocol/result.hpp"
#include "store/journal.hpp"
#include "store/ports.hpp"
#include "store/projector.hpp"

namespace app {

// Applies one journal entry and returns its result (what the live run replied, since the
// engine is deterministic). Throws std::runtime_error if the replay diverges from the live run
// (another next order id, a request that no longer parses or changes nothing).
protocol::Result replay_entry(const store::JournalEntry& entry, market::Engine& engine,
                              market::Effects& fx);

struct Loaded {
  std::int64_t last_seq = 0;  // the largest journal seq: new requests continue after it
  std::int64_t replayed = 0;
  double seconds = 0;
};

// Fills an empty engine: discards the projector's queue, loads the projection, replays the
// journal after its position, and hands the replay's effects to the projector so the tables
// catch up; `closed` is emptied and refilled with the replay's closed orders. Waits for the
// projector only if very far behind. Logs progress.
Loaded load_state(store::StateReader& db, market::Engine& engine, ClosedOrders& closed,
                  store::Projector& projector);

}  // namespace app
