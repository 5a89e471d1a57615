#pragma once
// Applies a parsed request to the engine, child by child in document order, and says what each
// child produced. The caller holds the engine lock; this does no I/O.
#include <cstdint>

#include "exchange/effects.hpp"
#include "exchange/engine.hpp"
#include "protocol/command.hpp"
#include "protocol/result.hpp"

namespace app {

protocol::Result apply(const protocol::Command& cmd, exchange::Engine& engine, std::int64_t now,
                       exchange::Effects& fx);

}  // namespace app
