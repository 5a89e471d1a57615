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

#include "concurrency/model.hpp"
#include "serving/handler.hpp"
#include "serving/metrics_sink.hpp"

namespace concurrency {

// What a model's run() was handed, with its options: three references, cheap to copy. All
// three outlive the runner.
class RequestRunner {
 public:
  RequestRunner(const ModelOptions& options, serving::Handler& handler,
                serving::MetricsSink& metrics)
      : options_(options), handler_(handler), metrics_(metrics) {}

  // Runs one request; `done` gets exactly one reply (an "Internal error" one if the handler
  // throws). `children` is the request's child count if the caller already scanned it
  // (scan_request), or -1 to scan here when simulated I/O needs it.
  std::chrono::nanoseconds run(std::string_view payload, const auth::Caller& caller,
                               serving::Handler::Reply done, int children = -1) const;
  // The same, then waits for the reply (for models whose thread owns the connection).
  std::string run_blocking(std::string_view payload, const auth::Caller& caller) const;

  const ModelOptions& options() const { return options_; }
  serving::MetricsSink& metrics() const { return metrics_; }

 private:
  const ModelOptions& options_;
  serving::Handler& handler_;
  serving::MetricsSink& metrics_;
};

// Nanoseconds the calling thread has spent runnable but waiting for a CPU, from
// /proc/thread-self/schedstat; -1 where the kernel does not say. A difference of two readings
// is the CPU contention a piece of work suffered.
std::int64_t thread_runqueue_wait_ns();

}  // namespace concurrency
