#pragma once
// The group commit's unit (store/batcher.hpp): the journal entries one statement appends, and
// their requests' effects, which go on to the projector unmerged once the entries are durable.
#include <cstddef>
#include <utility>
#include <vector>

#include "market/effects.hpp"
#include "store/deferred_effects.hpp"
#include "store/journal.hpp"

namespace store {

struct JournalBatch {
  std::vector<JournalEntry> entries;  // in seq order
  DeferredEffects effects;            // the entries' requests', in the same order
  // One per entry, and one more for a poisoned batch (Batcher::poison_open_batch), which must
  // be taken by the writer even with no entry.
  std::size_t requests = 0;

  // One request: its journal entry and its effects.
  void add(JournalEntry&& entry, market::Effects&& fx) {
    ++requests;
    entries.push_back(std::move(entry));
    effects.add(std::move(fx));
  }
  bool empty() const { return requests == 0; }
};

}  // namespace store
