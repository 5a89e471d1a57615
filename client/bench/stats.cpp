#include "bench/stats.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace exch::stats {

std::size_t nearest_rank(std::size_t n, double p) {
  if (n == 0) throw std::invalid_argument("percentile of no samples");
  if (!(p >= 0 && p <= 100)) throw std::invalid_argument("percentile outside [0, 100]");
  // p * n / 100 in floating point can land a hair above an integer
  // (e.g. 99.9 * 1000 / 100); the epsilon keeps exact products exact.
  double exact = p * static_cast<double>(n) / 100.0;
  double rank = std::ceil(exact - 1e-9 * std::max(1.0, exact));
  if (rank < 1) rank = 1;
  if (rank > static_cast<double>(n)) rank = static_cast<double>(n);
  return static_cast<std::size_t>(rank);
}

double percentile_nearest_rank(const std::vector<double>& sorted, double p) {
  return sorted[nearest_rank(sorted.size(), p) - 1];
}

double mean(const std::vector<double>& samples) {
  if (samples.empty()) return 0;
  double sum = 0;
  for (double x : samples) sum += x;
  return sum / static_cast<double>(samples.size());
}

double sample_stddev(const std::vector<double>& samples) {
  if (samples.size() < 2) return 0;
  double m = mean(samples);
  double ss = 0;
  for (double x : samples) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(samples.size() - 1));
}

double student_t_975(std::size_t df) {
  static const double small[] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365,
                                 2.306, 2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
                                 2.120, 2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
                                 2.064, 2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  struct Row {
    std::size_t df;
    double t;
  };
  static const Row large[] = {{120, 1.980}, {100, 1.984}, {80, 1.990},
                              {60, 2.000},  {50, 2.009},  {40, 2.021}};
  if (df == 0) throw std::invalid_argument("Student t needs at least 1 degree of freedom");
  if (df <= 30) return small[df];
  if (df > 120) return 1.960;
  for (const Row& r : large)
    if (df >= r.df) return r.t;
  return small[30];
}

MeanCI mean_ci95(const std::vector<double>& samples) {
  MeanCI ci;
  ci.n = samples.size();
  ci.mean = mean(samples);
  ci.stddev = sample_stddev(samples);
  if (ci.n >= 2)
    ci.half_width = student_t_975(ci.n - 1) * ci.stddev / std::sqrt(static_cast<double>(ci.n));
  return ci;
}

double share_above(const std::vector<double>& samples, double threshold) {
  if (samples.empty()) return 0;
  std::size_t above = 0;
  for (double x : samples)
    if (x > threshold) ++above;
  return static_cast<double>(above) / static_cast<double>(samples.size());
}

Jitter jitter(const std::vector<double>& samples) {
  Jitter j;
  j.mean = mean(samples);
  j.stddev = sample_stddev(samples);
  j.beyond_2sigma = share_above(samples, j.mean + 2 * j.stddev);
  j.beyond_3sigma = share_above(samples, j.mean + 3 * j.stddev);
  j.beyond_4sigma = share_above(samples, j.mean + 4 * j.stddev);
  return j;
}

Summary summarize(std::vector<double> samples) {
  Summary s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.count = samples.size();
  s.min = samples.front();
  s.max = samples.back();
  s.p50 = percentile_nearest_rank(samples, 50);
  s.p90 = percentile_nearest_rank(samples, 90);
  s.p95 = percentile_nearest_rank(samples, 95);
  s.p99 = percentile_nearest_rank(samples, 99);
  s.p999 = percentile_nearest_rank(samples, 99.9);
  s.jitter = jitter(samples);
  s.mean = s.jitter.mean;
  s.stddev = s.jitter.stddev;
  return s;
}

}  // namespace exch::stats
