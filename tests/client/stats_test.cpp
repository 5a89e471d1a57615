// Statistics of exchange-client bench against hand-computed values.
#include "bench/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include <catch2/catch.hpp>

using namespace exch::stats;

TEST_CASE("nearest rank is ceil(p/100 * n), at least 1", "[stats]") {
  CHECK(nearest_rank(10, 0) == 1);
  CHECK(nearest_rank(10, 5) == 1);    // 0.5 -> 1
  CHECK(nearest_rank(10, 50) == 5);   // exactly 5
  CHECK(nearest_rank(10, 90) == 9);   // exactly 9 (not 10: no float creep)
  CHECK(nearest_rank(10, 99) == 10);  // 9.9 -> 10
  CHECK(nearest_rank(10, 100) == 10);
  CHECK(nearest_rank(3, 50) == 2);  // 1.5 -> 2
  CHECK(nearest_rank(1000, 99.9) == 999);
  // 99.9 * 41000 / 100 is 40959.000000000007 in binary floating point; the
  // exact value is 40959, so the rank must not become 40960.
  CHECK(nearest_rank(41000, 99.9) == 40959);
  CHECK(nearest_rank(1000, 99) == 990);
  CHECK(nearest_rank(7, 99.9) == 7);  // 6.993 -> 7
  CHECK_THROWS_AS(nearest_rank(0, 50), std::invalid_argument);
  CHECK_THROWS_AS(nearest_rank(10, 101), std::invalid_argument);
}

TEST_CASE("nearest-rank percentiles of the textbook examples", "[stats]") {
  // Wikipedia "Percentile", nearest-rank method, examples 1 and 2.
  std::vector<double> a{15, 20, 35, 40, 50};
  CHECK(percentile_nearest_rank(a, 5) == 15);
  CHECK(percentile_nearest_rank(a, 30) == 20);
  CHECK(percentile_nearest_rank(a, 40) == 20);
  CHECK(percentile_nearest_rank(a, 50) == 35);
  CHECK(percentile_nearest_rank(a, 100) == 50);

  std::vector<double> b{3, 6, 7, 8, 8, 10, 13, 15, 16, 20};
  CHECK(percentile_nearest_rank(b, 25) == 7);
  CHECK(percentile_nearest_rank(b, 50) == 8);
  CHECK(percentile_nearest_rank(b, 75) == 15);
  CHECK(percentile_nearest_rank(b, 100) == 20);
}

TEST_CASE("mean and sample standard deviation", "[stats]") {
  std::vector<double> x{2, 4, 4, 4, 5, 5, 7, 9};
  CHECK(mean(x) == Approx(5.0));
  // squared deviations sum to 32; 32 / (8 - 1) = 4.571428...
  CHECK(sample_stddev(x) == Approx(std::sqrt(32.0 / 7.0)));
  CHECK(sample_stddev(x) == Approx(2.138090).epsilon(1e-6));
  CHECK(sample_stddev({42}) == 0);
  CHECK(mean({}) == 0);
  CHECK(sample_stddev({}) == 0);
}

TEST_CASE("Student t 0.975 quantiles", "[stats]") {
  CHECK(student_t_975(1) == Approx(12.706));
  CHECK(student_t_975(2) == Approx(4.303));
  CHECK(student_t_975(9) == Approx(2.262));
  CHECK(student_t_975(30) == Approx(2.042));
  CHECK(student_t_975(35) == Approx(2.042));  // between rows: fewer d.f. (conservative)
  CHECK(student_t_975(40) == Approx(2.021));
  CHECK(student_t_975(59) == Approx(2.009));
  CHECK(student_t_975(120) == Approx(1.980));
  CHECK(student_t_975(121) == Approx(1.960));
  CHECK_THROWS_AS(student_t_975(0), std::invalid_argument);
}

TEST_CASE("95% confidence interval of a mean", "[stats]") {
  // {10, 12, 14}: mean 12, s = 2, t(2) = 4.303, half = 4.303 * 2 / sqrt(3) = 4.968677
  auto ci = mean_ci95({10, 12, 14});
  CHECK(ci.n == 3);
  CHECK(ci.mean == Approx(12));
  CHECK(ci.stddev == Approx(2));
  CHECK(ci.half_width == Approx(4.968677).epsilon(1e-6));
  CHECK(ci.lower() == Approx(12 - 4.968677).epsilon(1e-6));
  CHECK(ci.upper() == Approx(12 + 4.968677).epsilon(1e-6));

  // 1..10: mean 5.5, s = sqrt(82.5 / 9) = 3.027650, t(9) = 2.262 -> 2.165700
  std::vector<double> ten(10);
  std::iota(ten.begin(), ten.end(), 1.0);
  auto ci10 = mean_ci95(ten);
  CHECK(ci10.mean == Approx(5.5));
  CHECK(ci10.half_width == Approx(2.165700).epsilon(1e-5));

  auto one = mean_ci95({7});  // no interval from one repetition
  CHECK(one.mean == 7);
  CHECK(one.half_width == 0);
}

TEST_CASE("jitter shares beyond mean + k sd", "[stats]") {
  // 99 x 10 and one 110: mean 11, squared deviations 99 + 99^2 = 9900,
  // s = sqrt(9900 / 99) = 10; thresholds 31, 41, 51: only the 110 is beyond.
  std::vector<double> x(99, 10.0);
  x.push_back(110);
  Jitter j = jitter(x);
  CHECK(j.mean == Approx(11));
  CHECK(j.stddev == Approx(10));
  CHECK(j.beyond_2sigma == Approx(0.01));
  CHECK(j.beyond_3sigma == Approx(0.01));
  CHECK(j.beyond_4sigma == Approx(0.01));

  // 8 x 0 and 2 x 10: mean 2, s = sqrt((8*4 + 2*64) / 9) = 4.2164;
  // mean + 2s = 10.43 -> nobody beyond; mean + 1s would be 6.2 (both 10s).
  std::vector<double> y{0, 0, 0, 0, 0, 0, 0, 0, 10, 10};
  Jitter k = jitter(y);
  CHECK(k.stddev == Approx(std::sqrt(160.0 / 9.0)));
  CHECK(k.beyond_2sigma == 0);
  CHECK(share_above(y, k.mean + k.stddev) == Approx(0.2));

  // strictly greater
  CHECK(share_above({1, 2, 3, 4}, 3) == Approx(0.25));
  CHECK(share_above({}, 3) == 0);
}

TEST_CASE("summarize sorts and reports nearest-rank percentiles", "[stats]") {
  std::vector<double> x(1000);
  std::iota(x.begin(), x.end(), 1.0);  // 1..1000
  std::mt19937 g(7);
  std::shuffle(x.begin(), x.end(), g);
  Summary s = summarize(x);
  CHECK(s.count == 1000);
  CHECK(s.min == 1);
  CHECK(s.max == 1000);
  CHECK(s.p50 == 500);
  CHECK(s.p90 == 900);
  CHECK(s.p95 == 950);
  CHECK(s.p99 == 990);
  CHECK(s.p999 == 999);
  CHECK(s.mean == Approx(500.5));
  CHECK(s.jitter.mean == Approx(500.5));
  // s^2 = n(n+1)/12 for 1..n -> 1000 * 1001 / 12
  CHECK(s.stddev == Approx(std::sqrt(1000.0 * 1001.0 / 12.0)));

  Summary empty = summarize({});
  CHECK(empty.count == 0);
  CHECK(empty.p99 == 0);
}
