// The two load drivers. Both fill ctx with samples (warm-up ones flagged).
#pragma once

#include "bench/runner.hpp"

namespace exch::bench {

// --clients threads, each sending back to back (plus optional think time).
void run_closed_loop(RunContext& ctx);

// Poisson arrivals at --rate; latency from the intended send time; a pool of
// --senders threads (or a thread per arrival) and an in-flight cap.
void run_open_loop(RunContext& ctx);

}  // namespace exch::bench
