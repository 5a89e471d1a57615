// Turning samples into numbers: the human summary (stdout), --json and --csv.
#pragma once

#include <cstdint>
#include <fstream>
#include <iosfwd>
#include <string>
#include <vector>

#include "bench/options.hpp"
#include "bench/reasons.hpp"
#include "bench/runner.hpp"
#include "bench/stats.hpp"

namespace exch::bench {

struct SetupSummary {
  bool ran = false;
  std::uint64_t requests = 0;
  std::uint64_t created = 0;
  std::uint64_t already_existed = 0;
  std::uint64_t errors = 0;
  std::string first_error;
  std::uint64_t seed_orders = 0;  // query workload: orders placed to have ids
  double seconds = 0;
};

// Latency of the served requests with one number of children (--class-mix).
struct ClassLatency {
  unsigned children = 0;
  stats::Summary latency_ms;
};

struct RepSummary {
  unsigned rep = 0;
  std::uint64_t requests = 0;  // measured (warm-up excluded), any outcome
  std::uint64_t warmup_requests = 0;
  std::uint64_t ok = 0, rejected = 0, error_replies = 0, conn_errors = 0, dropped = 0;
  std::uint64_t items = 0;  // items of served requests
  std::uint64_t items_rejected = 0, items_error = 0;
  double completion_s = 0;          // first measured intended start .. last measured reply
  double throughput_rps = 0;        // served requests / completion
  double throughput_items_ps = 0;   // items of served requests / completion
  stats::Summary latency_ms;        // served, end (all replies) - intended
  stats::Summary first_latency_ms;  // served, first reply - intended
  std::uint64_t disagreements = 0;
  std::uint64_t replica_failures = 0;
  std::size_t sessions_opened = 0;   // persistent: opened during this repetition
  std::uint64_t tls_handshakes = 0;  // --tls: completed during this repetition
  std::uint64_t tls_resumed = 0;     // of which resumed a session
  std::vector<std::string> error_examples;
  ReasonTally rejected_reasons;        // <error> texts of the rejected items, by reason
  ReasonTally error_reasons;           // <error> texts of the error replies' items, by reason
  std::vector<ClassLatency> by_class;  // ascending children; shown with --class-mix
};

RepSummary summarize_rep(unsigned rep, const std::vector<Sample>& samples);

void print_summary(std::ostream& os, const BenchOptions& o, const std::vector<std::string>& targets,
                   const SetupSummary& setup, const std::vector<RepSummary>& reps);

bool write_json(const std::string& path, const BenchOptions& o,
                const std::vector<std::string>& targets, const SetupSummary& setup,
                const std::vector<RepSummary>& reps, std::string& error);

class CsvWriter {
 public:
  bool open(const std::string& path, std::string& error);
  void write(unsigned rep, const std::vector<Sample>& samples);
  bool close(std::string& error);

 private:
  std::ofstream out_;
  std::string path_;
};

}  // namespace exch::bench
