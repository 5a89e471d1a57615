#pragma once
// What distinguishes the five event-loop models: how a framed request runs. The event loop
// (EventLoop: accept, frame, write replies) and the model around it (stop, gauges) are the same
// for all of them (event_loop_model.cpp); a model is a RunPolicy plus its line in models.cpp.
//
//   run_inline           reactor: on the event-loop thread itself
//   run_on_new_thread    per-request: a new thread per request, which exits
//   run_on_fixed_pool    pool: --threads pre-started workers
//   run_on_fotp_pool     fotp: a pool sized every second by seed 001's rule
//   run_on_adaptive_pool adaptive: a pool sized by Little's law every 250 ms
#include <functional>
#include <memory>
#include <string>

#include "concurrency/model.hpp"
#include "concurrency/run_request.hpp"
#include "net/async_connection.hpp"
#include "serving/metrics_sink.hpp"

namespace concurrency {

struct Job {
  std::string payload;
  auth::Caller caller;
  net::AsyncConnection::ReplyFn reply;  // exactly once, from any thread
};

// A policy runs each job with the model's RequestRunner (its options, handler and metrics),
// which outlives it.
class RunPolicy {
 public:
  virtual ~RunPolicy() = default;
  // On the event-loop thread: runs the job here or hands it to another thread.
  virtual void run(Job job) = 0;
  // Threads, busy threads, queue length and pool target, for the metrics (any thread).
  virtual void gauges(serving::Gauges& g) const = 0;
  // After the event loop has returned (every reply written): stops and joins its threads.
  virtual void finish() = 0;
};

using RunPolicyFactory = std::function<std::unique_ptr<RunPolicy>(const RequestRunner&)>;

std::unique_ptr<RunPolicy> run_inline(const RequestRunner&);
std::unique_ptr<RunPolicy> run_on_new_thread(const RequestRunner&);
std::unique_ptr<RunPolicy> run_on_fixed_pool(const RequestRunner&);
std::unique_ptr<RunPolicy> run_on_fotp_pool(const RequestRunner&);
std::unique_ptr<RunPolicy> run_on_adaptive_pool(const RequestRunner&);

// The model that serves connections with an EventLoop and runs requests by `policy`.
std::unique_ptr<Model> make_event_loop_model(const ModelOptions& options, RunPolicyFactory policy);

}  // namespace concurrency
