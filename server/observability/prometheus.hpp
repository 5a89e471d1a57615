#pragma once
// The pieces of the Prometheus text exposition format (version 0.0.4) that /metrics needs:
// lock-free histograms that any thread may update, metric families declared as rows, and the
// lines that render them. No client library is packaged for Debian 12's C++; the format is a
// few lines of text.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace app::prometheus {

// One line of a metric family: the suffix of its name ("", or _bucket, _sum and _count for a
// histogram), its labels (`root="create"`, "" for none) and its value.
struct Series {
  std::string suffix;
  std::string labels;
  double value;
};
using SeriesList = std::vector<Series>;

// A histogram with fixed upper bounds (plus +Inf). observe() is lock-free; a scrape that runs
// meanwhile may see an observation in _sum but not yet in its bucket, which Prometheus
// tolerates (each series is monotonic on its own). _count is the +Inf bucket, as it must be.
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  void observe(double value);
  // The _bucket, _sum and _count series; `labels` (e.g. `root="create"`) go on each.
  SeriesList series(const std::string& labels = "") const;

 private:
  std::vector<double> bounds_;
  std::vector<std::atomic<std::uint64_t>> buckets_;  // per bucket, not cumulative; last: +Inf
  std::atomic<double> sum_{0};
};

// Bounds that grow by `factor` from `start`, `count` of them (Prometheus' ExponentialBuckets).
std::vector<double> exponential_buckets(double start, double factor, int count);

// A family's HELP and TYPE lines, then its series; nothing at all if `series` is empty.
void family(std::string& out, const std::string& name, const std::string& type,
            const std::string& help, const SeriesList& series);
// The one unlabelled series of `value`, or none if it is negative (-1: does not apply).
SeriesList single(long value);
// A duration kept in milliseconds as one series in seconds, as Prometheus wants; none if
// negative.
SeriesList seconds_from_ms(long ms);

// A metric family declared as a row: its name, type and help, and how to read its series from
// a `Source` (what one scrape sampled). A row that reads no series is left out, HELP and TYPE
// too: it does not apply to this server (a model without a queue has no queue length).
template <class Source>
struct Row {
  const char* name;
  const char* type;  // "counter", "gauge" or "histogram"
  const char* help;
  SeriesList (*read)(const Source& source);
};

// The exposition of `rows`, in their order, each read from `source`.
template <class Source>
std::string render(const std::vector<Row<Source>>& rows, const Source& source) {
  std::string out;
  out.reserve(16384);
  for (const Row<Source>& row : rows) family(out, row.name, row.type, row.help, row.read(source));
  return out;
}

// A value as Prometheus writes it: integers without a fraction, +Inf, shortest round-trip.
std::string number(double value);

}  // namespace app::prometheus
