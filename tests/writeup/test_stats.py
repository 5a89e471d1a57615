"""The statistics behind the plots and the report, against values computed by hand."""
import math

import pytest

from study import stats


# ---- percentiles (nearest rank) -----------------------------------------------------------

def test_percentile_nearest_rank_textbook_example():
    # n = 5: p30 -> rank ceil(1.5) = 2; p40 -> ceil(2.0) = 2; p50 -> ceil(2.5) = 3.
    data = [35, 20, 50, 15, 40]  # unsorted on purpose
    assert stats.percentile(data, 0) == 15
    assert stats.percentile(data, 30) == 20
    assert stats.percentile(data, 40) == 20
    assert stats.percentile(data, 50) == 35
    assert stats.percentile(data, 100) == 50


def test_percentile_is_a_sample_never_interpolated():
    # 1..10: p90 -> rank 9 -> 9 (linear interpolation would give 9.1); p95 -> rank ceil(9.5) = 10.
    data = list(range(1, 11))
    assert stats.percentile(data, 90) == 9
    assert stats.percentile(data, 95) == 10
    assert stats.percentiles(data, [50, 90, 99]) == [5, 9, 10]


def test_percentile_rank_survives_floating_point():
    # 99.9 * 1000 / 100 is 999.0000000000001 in binary floating point: the rank must be 999.
    assert stats.nearest_rank(1000, 99.9) == 999
    assert stats.percentile(range(1, 1001), 99.9) == 999
    assert stats.nearest_rank(100, 99) == 99


def test_percentile_rejects_nonsense():
    with pytest.raises(ValueError):
        stats.percentile([], 50)
    with pytest.raises(ValueError):
        stats.percentile([1.0], 101)


# ---- mean, standard deviation, Student t, confidence intervals ----------------------------

def test_sample_stddev_divides_by_n_minus_1():
    # Sum of squared deviations from 5 is 32; 32 / 7 (not / 8).
    data = [2, 4, 4, 4, 5, 5, 7, 9]
    assert stats.mean(data) == 5
    assert stats.sample_stddev(data) == pytest.approx(math.sqrt(32 / 7))
    assert stats.sample_stddev([3.0]) == 0


def test_student_t_table():
    assert stats.student_t_975(1) == 12.706
    assert stats.student_t_975(4) == 2.776
    assert stats.student_t_975(9) == 2.262
    assert stats.student_t_975(30) == 2.042
    assert stats.student_t_975(35) == 2.042  # between rows: fewer degrees of freedom
    assert stats.student_t_975(45) == 2.021
    assert stats.student_t_975(120) == 1.980
    assert stats.student_t_975(121) == 1.960
    with pytest.raises(ValueError):
        stats.student_t_975(0)


def test_ci95_five_repetitions():
    # mean 14; s = sqrt((16+4+0+4+16)/4) = sqrt(10); t(4) = 2.776;
    # half-width = 2.776 * sqrt(10) / sqrt(5) = 2.776 * sqrt(2) = 2.776 * 1.4142136 = 3.925857
    ci = stats.mean_ci95([10, 12, 14, 16, 18])
    assert ci.n == 5
    assert ci.mean == 14
    assert ci.stddev == pytest.approx(3.16227766)
    assert ci.half_width == pytest.approx(3.925857, abs=1e-6)
    assert ci.low == pytest.approx(10.074143, abs=1e-6)
    assert ci.high == pytest.approx(17.925857, abs=1e-6)
    assert ci.relative == pytest.approx(3.925857 / 14, abs=1e-6)


def test_ci95_eight_samples_and_two_samples():
    # s = sqrt(32/7) = 2.138090; t(7) = 2.365; hw = 2.365 * 2.138090 / 2.828427 = 1.787772
    assert stats.mean_ci95([2, 4, 4, 4, 5, 5, 7, 9]).half_width == pytest.approx(1.787772, abs=1e-6)
    # n = 2: hw = t(1) * s / sqrt(2) = 12.706 * sqrt(2) / sqrt(2) = 12.706
    assert stats.mean_ci95([1, 3]).half_width == pytest.approx(12.706)


def test_ci95_single_sample_has_no_interval():
    ci = stats.mean_ci95([7.5])
    assert (ci.mean, ci.half_width, ci.low, ci.high) == (7.5, 0, 7.5, 7.5)


# ---- jitter table (seed 002) ----------------------------------------------------------------

def test_share_above_is_strict():
    assert stats.share_above([1, 2, 3, 4], 3) == 0.25
    assert stats.share_above([], 3) == 0


def test_jitter_one_outlier_in_a_hundred():
    # 99 samples of 1 and one of 100: mean 1.99; squared deviations 99 * 0.99^2 + 98.01^2
    # = 9702.99; / 99 = 98.01; s = 9.9. mean + 4s = 41.59 < 100, so 1% lies beyond 2, 3 and 4 s.
    j = stats.jitter([1.0] * 99 + [100.0])
    assert j.n == 100
    assert j.mean == pytest.approx(1.99)
    assert j.stddev == pytest.approx(9.9)
    assert (j.beyond_2sd, j.beyond_3sd, j.beyond_4sd) == (0.01, 0.01, 0.01)


def test_jitter_nothing_beyond_two_sd():
    # mean 12, s = sqrt((4 * 4 + 64) / 4) = sqrt(20) = 4.472; mean + 2s = 20.94 > 20.
    j = stats.jitter([10, 10, 10, 10, 20])
    assert j.stddev == pytest.approx(math.sqrt(20))
    assert j.beyond_2sd == 0


def test_jitter_table_difference_column_is_a_ratio():
    # a: mean 2, s 1; b: mean 4, s 2 -> 200% in both rows (seed 002 prints 4 servers / 2 servers).
    rows = stats.jitter_table([1, 2, 3], [2, 4, 6])
    assert [r[0] for r in rows] == ["average", "standard deviation", "beyond average + 2 sd",
                                    "beyond average + 3 sd", "beyond average + 4 sd"]
    name, a, b, diff = rows[0]
    assert (a, b, diff) == (2, 4, 200)
    assert rows[1][1:] == pytest.approx((1, 2, 200))
    assert math.isnan(rows[2][3])  # 0 beyond 2 sd in a: no ratio


def test_seed002_published_ratio():
    # Seed 002: averages 128 and 157 ms -> 123%; standard deviations 46.7 and 92.7 -> 199%.
    assert round(stats.ratio_percent(157, 128)) == 123
    assert round(stats.ratio_percent(92.7, 46.7)) == 199


# ---- seed 003's summary rows, series helpers ------------------------------------------------

def test_completion_row_reproduces_seed003_first_column():
    # Seed 003, one thread per client, 20 clients: avg 90.7 ms, 4.5 ms per request, 221 req/s.
    totals = [70, 98, 102, 99, 96, 81, 88, 101, 74 + 24, 74]  # any ten that average 90.7
    assert stats.mean(totals) == pytest.approx(90.7)
    row = stats.completion_row(totals, 20)
    assert row.avg_total_ms == pytest.approx(90.7)
    assert round(row.delay_per_request_ms, 1) == 4.5
    assert round(row.throughput_rps) == 221


def test_rolling_mean_trailing_window():
    assert stats.rolling_mean([1, 2, 3, 4, 5], 2) == [1, 1.5, 2.5, 3.5, 4.5]
    assert stats.rolling_mean([4, 8], 5) == [4, 6]
    with pytest.raises(ValueError):
        stats.rolling_mean([1], 0)


def test_per_second_counts_half_open_bins():
    times = [0.1, 0.9, 1.0, 2.5, 3.2, -0.1]
    assert stats.per_second_counts(times, 0.0, 3) == [2, 1, 1]
    assert stats.per_second_counts([10.5, 11.0], 10.0, 2) == [1, 1]


# ---- least-squares slope with its interval -----------------------------------------------

def test_slope_ci95_by_hand():
    # x 0,1,2,3; y 1,3,2,5: mean x 1.5, mean y 2.75, Sxx 5, Sxy 5.5 -> slope 1.1; residuals
    # -0.1, 0.8, -1.3, 0.6 after the fit (intercept 1.1): SSR 2.7, se sqrt(2.7 / 2 / 5) = 0.5196;
    # t(2) = 4.303 -> half-width 2.236.
    c = stats.slope_ci95([0, 1, 2, 3], [1, 3, 2, 5])
    assert c.n == 4 and c.mean == pytest.approx(1.1)
    assert c.stddev == pytest.approx(math.sqrt(0.27))
    assert c.half_width == pytest.approx(4.303 * math.sqrt(0.27))


def test_slope_ci95_needs_three_points_and_two_xs():
    assert stats.slope_ci95([1, 2], [1, 2]) is None
    assert stats.slope_ci95([1, 1, 1], [1, 2, 3]) is None
    assert stats.slope_ci95([0, 1, 2], [0, 2, 4]).half_width == pytest.approx(0)
