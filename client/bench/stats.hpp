// Statistics for benchmark samples. Pure functions, no I/O; unit-tested in
// tests/client/stats_test.cpp.
//
// Definitions (what the reports mean):
//  * percentile p of n samples: nearest-rank method on the samples sorted
//    ascending: the value at 1-based rank ceil(p/100 * n) (rank 1 for p = 0).
//    It is always one of the samples; no interpolation.
//  * mean: arithmetic mean; stddev: SAMPLE standard deviation (divides by n-1;
//    0 for fewer than 2 samples).
//  * 95% confidence interval of a mean (over repetitions): mean +- t * s / sqrt(n)
//    with t the 0.975 quantile of Student's t with n-1 degrees of freedom
//    (table for 1..30, 40, 50, 60, 80, 100, 120 d.f.; between table rows the row
//    with FEWER degrees of freedom is used, which is conservative; 1.96 above 120).
//  * jitter: share of samples strictly greater than mean + k * stddev, k = 2, 3, 4.
#pragma once

#include <cstddef>
#include <vector>

namespace exch::stats {

// `sorted` must be ascending and non-empty; p in [0, 100].
double percentile_nearest_rank(const std::vector<double>& sorted, double p);
// 1-based rank used by percentile_nearest_rank (exposed for tests).
std::size_t nearest_rank(std::size_t n, double p);

double mean(const std::vector<double>& samples);
double sample_stddev(const std::vector<double>& samples);

// 0.975 quantile of Student's t with `df` degrees of freedom (df >= 1).
double student_t_975(std::size_t df);

struct MeanCI {
  std::size_t n = 0;
  double mean = 0;
  double stddev = 0;
  double half_width = 0;  // 0 when n < 2 (no interval)
  double lower() const { return mean - half_width; }
  double upper() const { return mean + half_width; }
};
MeanCI mean_ci95(const std::vector<double>& samples);

struct Jitter {
  double mean = 0;
  double stddev = 0;
  double beyond_2sigma = 0;  // fractions in [0, 1]
  double beyond_3sigma = 0;
  double beyond_4sigma = 0;
};
Jitter jitter(const std::vector<double>& samples);
// Share of samples strictly greater than threshold.
double share_above(const std::vector<double>& samples, double threshold);

struct Summary {
  std::size_t count = 0;
  double min = 0, max = 0, mean = 0, stddev = 0;
  double p50 = 0, p90 = 0, p95 = 0, p99 = 0, p999 = 0;
  Jitter jitter;
};
// Sorts a copy; all zero for no samples.
Summary summarize(std::vector<double> samples);

}  // namespace exch::stats
