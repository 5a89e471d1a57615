#pragma once
// One accepted request as the journal keeps it: enough for a deterministic replay.
#include <cstdint>
#include <string>

namespace store {

struct JournalEntry {
  std::int64_t seq = 0;             // assigned by the Batcher, in engine order
  std::int64_t at = 0;              // the `now` the engine applied it with
  std::int64_t first_order_id = 0;  // the engine's next order id before applying it
  std::string request;              // the payload as received
  // The children the live run refused by a limit ("3,17"; app::Admission): a replay refuses
  // the same ones whatever the limits are then.
  std::string refused;
};

}  // namespace store
