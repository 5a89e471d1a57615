#pragma once
// Applies a parsed request to the engine, child by child in document order, and says what each
// child produced. The caller holds the engine lock; this does no I/O.
#include <cstdint>

#include "gates/admission.hpp"
#include "market/effects.hpp"
#include "market/engine.hpp"
#include "protocol/command.hpp"
#include "protocol/result.hpp"

namespace app {

struct Applied {
  protocol::Result result;
  // Queries of orders the engine no longer holds in memory: result.items[index] is a
  // placeholder <status> to complete from the database (or turn into an error).
  struct ArchiveLookup {
    std::size_t index;  // in result.items
    std::size_t child;  // in the command (Admission's index)
    market::OrderId id;
  };
  std::vector<ArchiveLookup> archive_lookups;
};

// `admission` decides whether each child may be applied (limits live, the live run's refusals
// in a replay); an archived order's status is checked against it when it is read.
Applied apply(const protocol::Command& cmd, market::Engine& engine, std::int64_t now,
              market::Effects& fx, Admission& admission);

}  // namespace app
