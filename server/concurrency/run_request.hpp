#pragma once
// How every model runs one request in the thread it chose: the simulated I/O of
// --simulated-io-ms-per-child, then the handler, timed, with the completion counted in the
// metrics. The time returned and recorded is the time in the handler call (plus the simulated
// I/O), not the wait for the group commit: handle() returns once the request is applied and
// its reply is queued behind the commit.
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "app/handler.hpp"
#include "concurrency/model.hpp"

namespace concurrency {

// `children` is the request's child count if the caller already scanned it (scan_request),
// or -1 to scan here when simulated I/O needs it.
std::chrono::nanoseconds run_request(app::Handler& handler, const ModelOptions& options,
                                     std::string_view payload, app::Handler::Reply done,
                                     int children = -1);

// The same, then waits for the reply (for models whose thread owns the connection).
std::string run_request_blocking(app::Handler& handler, const ModelOptions& options,
                                 std::string_view payload);

// Nanoseconds the calling thread has spent runnable but waiting for a CPU, from
// /proc/thread-self/schedstat; -1 where the kernel does not say. A difference of two readings
// is the CPU contention a piece of work suffered.
std::int64_t thread_runqueue_wait_ns();

}  // namespace concurrency
