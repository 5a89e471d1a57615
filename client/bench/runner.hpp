// What the closed and open loops share: executing one request against the
// targets, judging the reply, recording a sample, counters and progress.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/executor.hpp"
#include "bench/options.hpp"
#include "bench/reasons.hpp"
#include "bench/workload.hpp"

namespace exch::bench {

// Set by the first SIGINT: the run ends early but still reports.
bool interrupted();
void install_interrupt_handler();

enum class Status : std::uint8_t { Ok, Rejected, ErrorReply, ConnError, Dropped };
const char* to_string(Status s);

struct Sample {
  std::uint64_t index = 0;       // issue order within the repetition
  std::int64_t intended_ns = 0;  // when it should have been sent
  std::int64_t start_ns = 0;     // when a thread started sending it
  std::int64_t first_ns = 0;     // first reply in (replica mode; = end otherwise)
  std::int64_t end_ns = 0;       // every reply in (the vote)
  std::uint32_t items = 0;
  std::uint32_t items_rejected = 0;
  std::uint32_t items_error = 0;
  Status status = Status::Ok;
  std::int8_t agree = -1;  // replica mode: 1 agree, 0 disagree; -1 n/a
  std::uint8_t replica_failures = 0;
  bool warmup = false;

  bool served() const { return status == Status::Ok || status == Status::Rejected; }
};

struct Counters {
  std::atomic<std::uint64_t> sent{0}, done{0}, ok{0}, rejected{0}, error_replies{0}, conn_errors{0},
      dropped{0}, disagreements{0};
};

class RunContext {
 public:
  RunContext(const BenchOptions& options, Targets& targets, Workload& workload, unsigned rep);

  // Sends `request` to every target and judges the replies.
  Sample execute(Executor& executor, const Request& request, std::uint64_t index,
                 std::int64_t intended_ns, bool warmup);
  Sample dropped(std::uint64_t index, std::int64_t intended_ns, bool warmup);

  void add_samples(std::vector<Sample>&& samples);  // thread-safe
  std::vector<Sample> take_samples();

  void note_error(const std::string& message);  // keeps the first few distinct ones
  std::vector<std::string> error_examples() const;
  // <error> texts of measured requests by reason: the rejected items of served
  // requests, and the items of error replies (the same items the report counts).
  ReasonTally rejected_reasons() const;
  ReasonTally error_reasons() const;

  void abort(const std::string& why);
  bool aborted() const { return aborted_.load(std::memory_order_relaxed); }
  // Stop issuing requests: aborted, or the user pressed Ctrl-C.
  bool should_stop() const { return aborted() || interrupted(); }
  std::string abort_reason() const;

  const BenchOptions& options;
  Targets& targets;
  Workload& workload;
  const unsigned rep;
  TimeBase tb;
  std::int64_t warmup_ns = 0;
  Counters counters;

 private:
  mutable std::mutex mutex_;
  std::vector<Sample> samples_;
  std::vector<std::string> errors_;
  ReasonTally rejected_reasons_, error_reasons_;
  std::atomic<bool> aborted_{false};
  std::string abort_reason_;
};

// Prints "sent, done, errors, throughput" to stderr once a second.
class Progress {
 public:
  Progress(RunContext& ctx, bool enabled);
  ~Progress();
  void stop();

 private:
  RunContext& ctx_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace exch::bench
