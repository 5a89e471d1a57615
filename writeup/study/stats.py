"""Statistics used by the plots and the report. Pure functions, no I/O.

The definitions are the bench client's (client/bench/stats.hpp), so a number the report
computes from per-request CSVs agrees with the one the client printed:

* percentile p of n samples: nearest rank on the samples sorted ascending, the value at 1-based
  rank ceil(p/100 * n) (rank 1 for p = 0); always one of the samples, never interpolated.
* mean: arithmetic; stddev: SAMPLE standard deviation (n - 1), 0 for fewer than 2 samples.
* 95% confidence interval of a mean over repetitions: mean +- t * s / sqrt(n), t the 0.975
  quantile of Student's t with n - 1 degrees of freedom (table for 1..30, 40, 50, 60, 80, 100,
  120; between rows the row with FEWER degrees of freedom, which is conservative; 1.96 above
  120). No interval (half-width 0) for fewer than 2 samples.
* jitter (seed 002's table): mean, stddev, and the share of samples strictly greater than
  mean + k * stddev for k = 2, 3, 4.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

_T975_SMALL = [
    None, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
]
_T975_LARGE = [(120, 1.980), (100, 1.984), (80, 1.990), (60, 2.000), (50, 2.009), (40, 2.021)]


def nearest_rank(n: int, p: float) -> int:
    """1-based rank of the p-th percentile of n samples (nearest-rank method)."""
    if n <= 0:
        raise ValueError("percentile of no samples")
    if not (0 <= p <= 100):
        raise ValueError("percentile outside [0, 100]")
    exact = p * n / 100.0
    # p * n / 100 in floating point can land a hair above an integer (99.9 * 1000 / 100).
    rank = math.ceil(exact - 1e-9 * max(1.0, exact))
    return min(max(rank, 1), n)


def percentile(samples: Iterable[float], p: float) -> float:
    """Nearest-rank percentile of unsorted samples."""
    s = sorted(samples)
    return s[nearest_rank(len(s), p) - 1]


def percentiles(samples: Iterable[float], ps: Sequence[float]) -> list[float]:
    s = sorted(samples)
    return [s[nearest_rank(len(s), p) - 1] for p in ps]


def mean(samples: Sequence[float]) -> float:
    return sum(samples) / len(samples) if len(samples) else 0.0


def sample_stddev(samples: Sequence[float]) -> float:
    n = len(samples)
    if n < 2:
        return 0.0
    m = mean(samples)
    return math.sqrt(sum((x - m) ** 2 for x in samples) / (n - 1))


def student_t_975(df: int) -> float:
    """0.975 quantile of Student's t with df degrees of freedom (two-sided 95%)."""
    if df < 1:
        raise ValueError("Student t needs at least 1 degree of freedom")
    if df <= 30:
        return _T975_SMALL[df]
    if df > 120:
        return 1.960
    for row_df, t in _T975_LARGE:
        if df >= row_df:
            return t
    return _T975_SMALL[30]


@dataclass(frozen=True)
class MeanCI:
    n: int
    mean: float
    stddev: float
    half_width: float  # 0 when n < 2

    @property
    def low(self) -> float:
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        return self.mean + self.half_width

    @property
    def relative(self) -> float:
        """Half-width as a fraction of |mean| (0 for a zero mean)."""
        return self.half_width / abs(self.mean) if self.mean else 0.0


def mean_ci95(samples: Sequence[float]) -> MeanCI:
    samples = [float(x) for x in samples]
    n = len(samples)
    m = mean(samples)
    sd = sample_stddev(samples)
    hw = student_t_975(n - 1) * sd / math.sqrt(n) if n >= 2 else 0.0
    return MeanCI(n, m, sd, hw)


def slope_ci95(xs: Sequence[float], ys: Sequence[float]) -> MeanCI | None:
    """Least-squares slope of ys on xs as a MeanCI (n points, the slope, its standard error,
    t with n - 2 degrees of freedom times it); None for fewer than 3 points or one distinct x."""
    n = len(xs)
    if n < 3 or len(set(xs)) < 2:
        return None
    mx, my = mean(xs), mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    ssr = sum((y - my - b * (x - mx)) ** 2 for x, y in zip(xs, ys))
    se = math.sqrt(ssr / (n - 2) / sxx)
    return MeanCI(n, b, se, student_t_975(n - 2) * se)


def share_above(samples: Sequence[float], threshold: float) -> float:
    if not len(samples):
        return 0.0
    return sum(1 for x in samples if x > threshold) / len(samples)


@dataclass(frozen=True)
class Jitter:
    n: int
    mean: float
    stddev: float
    beyond_2sd: float  # fractions in [0, 1]
    beyond_3sd: float
    beyond_4sd: float


def jitter(samples: Sequence[float]) -> Jitter:
    m = mean(samples)
    sd = sample_stddev(samples)
    return Jitter(len(samples), m, sd, share_above(samples, m + 2 * sd),
                  share_above(samples, m + 3 * sd), share_above(samples, m + 4 * sd))


def ratio_percent(new: float, base: float) -> float:
    """Seed 002's 'Difference (%)' column: new as a percentage of base (NaN if base is 0)."""
    return 100.0 * new / base if base else float("nan")


def jitter_table(a: Sequence[float], b: Sequence[float]) -> list[tuple[str, float, float, float]]:
    """Seed 002's table for two sets of round-trip times: rows (name, a, b, b as % of a).

    Shares are fractions in [0, 1]; the caller formats them as percentages.
    """
    ja, jb = jitter(a), jitter(b)
    rows = [
        ("average", ja.mean, jb.mean),
        ("standard deviation", ja.stddev, jb.stddev),
        ("beyond average + 2 sd", ja.beyond_2sd, jb.beyond_2sd),
        ("beyond average + 3 sd", ja.beyond_3sd, jb.beyond_3sd),
        ("beyond average + 4 sd", ja.beyond_4sd, jb.beyond_4sd),
    ]
    return [(name, x, y, ratio_percent(y, x)) for name, x, y in rows]


def rolling_mean(values: Sequence[float], window: int) -> list[float]:
    """Trailing moving average: element i is the mean of values[max(0, i-window+1) .. i]."""
    if window < 1:
        raise ValueError("window must be at least 1")
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def per_second_counts(times_s: Iterable[float], start: float, seconds: int) -> list[int]:
    """How many of times_s fall in each 1-second bin [start + k, start + k + 1), k < seconds."""
    counts = [0] * seconds
    for t in times_s:
        k = math.floor(t - start)
        if 0 <= k < seconds:
            counts[k] += 1
    return counts


@dataclass(frozen=True)
class CompletionRow:
    """Seed 003's three summary rows of a column of 'time to finish all client tasks'."""
    avg_total_ms: float
    delay_per_request_ms: float
    throughput_rps: float


def completion_row(totals_ms: Sequence[float], requests: int) -> CompletionRow:
    """Average total time, average delay per request (total / requests) and throughput
    (requests per second of the average total), as seed 003 computed them."""
    avg = mean(totals_ms)
    return CompletionRow(avg, avg / requests, requests / (avg / 1000.0) if avg else float("nan"))
