#pragma once
// The pieces of the Prometheus text exposition format (version 0.0.4) that /metrics needs:
// lock-free counters and histograms that any thread may update, and the lines that render
// them. No client library is packaged for Debian 12's C++; the format is a few lines of text.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace app::prometheus {

// A histogram with fixed upper bounds (plus +Inf). observe() is lock-free; a scrape that runs
// meanwhile may see an observation in _sum but not yet in its bucket, which Prometheus
// tolerates (each series is monotonic on its own). _count is the +Inf bucket, as it must be.
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  void observe(double value);
  // Appends the _bucket, _sum and _count series; `labels` (e.g. `root="create"`) go on each.
  void render(std::string& out, const std::string& name, const std::string& labels = "") const;

 private:
  std::vector<double> bounds_;
  std::vector<std::atomic<std::uint64_t>> buckets_;  // per bucket, not cumulative; last: +Inf
  std::atomic<double> sum_{0};
};

// Bounds that grow by `factor` from `start`, `count` of them (Prometheus' ExponentialBuckets).
std::vector<double> exponential_buckets(double start, double factor, int count);

// "# HELP name help" and "# TYPE name type".
void header(std::string& out, const std::string& name, const std::string& type,
            const std::string& help);
// "name{labels} value".
void sample(std::string& out, const std::string& name, const std::string& labels, double value);
// A value as Prometheus writes it: integers without a fraction, +Inf, shortest round-trip.
std::string number(double value);

}  // namespace app::prometheus
