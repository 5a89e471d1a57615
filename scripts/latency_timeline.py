#!/usr/bin/env python3
"""Latency over time from `exchange-client bench --csv`: where a run's p99 comes from.

    scripts/latency_timeline.py RUN.csv [--bucket-ms 50] [--rows 40] [--slow-ms 6]

Prints, for each bucket of the run (by the time each request was sent, warm-up left out),
the requests answered, their throughput, p50, p99 and max, and a bar as long as the p99 in
ms; then how much of the run was in "slow" buckets (p99 above --slow-ms) and what share of
the requests and of the run's slowest 1 % fell in them. A tail made by something periodic
(the projection writes every --projection-gather-ms, 500 ms by default) shows as slow buckets
at that period, with the fast ones between them at the server's unhindered rate
(docs/notes/performance-history.md, "Where the rest goes").
"""
import argparse
import collections
import csv
import sys


def quantile(sorted_values, q):
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * q))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", help="the file `exchange-client bench --csv FILE` wrote")
    ap.add_argument("--bucket-ms", type=float, default=50, help="bucket width (default 50)")
    ap.add_argument("--rows", type=int, default=40, help="buckets printed, from the first (default 40; 0: all)")
    ap.add_argument("--slow-ms", type=float, default=6, help="a bucket whose p99 is above this is slow (default 6)")
    args = ap.parse_args()
    if args.bucket_ms <= 0:
        ap.error("--bucket-ms must be positive")

    buckets = collections.defaultdict(list)
    latencies = []
    try:
        with open(args.csv, newline="") as f:
            for row in csv.DictReader(f):
                if row.get("warmup") == "1" or row.get("ok") != "1":
                    continue
                latency_ms = float(row["latency_us"]) / 1000
                buckets[int(float(row["start_us"]) / 1000 // args.bucket_ms)].append(latency_ms)
                latencies.append(latency_ms)
    except (OSError, KeyError, ValueError) as e:
        sys.exit(f"latency_timeline: cannot read {args.csv} as a bench --csv file: {e}")
    if not latencies:
        sys.exit(f"latency_timeline: no answered request after the warm-up in {args.csv}")

    latencies.sort()
    tail_from = quantile(latencies, 0.99)
    keys = sorted(buckets)
    print(f"{len(latencies):,} requests; p50 {quantile(latencies, 0.5):.2f} ms, p99 {tail_from:.2f} ms; "
          f"buckets of {args.bucket_ms:g} ms by send time")
    print(f"{'from ms':>8} {'n':>6} {'per s':>8} {'p50':>6} {'p99':>6} {'max':>6}")
    for k in keys[:args.rows or None]:
        v = sorted(buckets[k])
        p99 = quantile(v, 0.99)
        print(f"{k * args.bucket_ms:8.0f} {len(v):6d} {len(v) * 1000 / args.bucket_ms:8.0f} {quantile(v, 0.5):6.2f} "
              f"{p99:6.2f} {v[-1]:6.1f} {'#' * min(60, int(p99))}")

    slow = [k for k in keys if quantile(sorted(buckets[k]), 0.99) > args.slow_ms]
    in_slow = sum(len(buckets[k]) for k in slow)
    tail_in_slow = sum(1 for k in slow for x in buckets[k] if x >= tail_from)
    tail_all = sum(1 for x in latencies if x >= tail_from)
    fast = [k for k in keys if k not in set(slow)]

    def rate(ks):
        return sum(len(buckets[k]) for k in ks) * 1000 / (len(ks) * args.bucket_ms) if ks else 0

    print(f"slow buckets (p99 > {args.slow_ms:g} ms): {len(slow)} of {len(keys)} "
          f"({100 * len(slow) / len(keys):.0f} % of the time), {100 * in_slow / len(latencies):.0f} % of the "
          f"requests, {100 * tail_in_slow / max(tail_all, 1):.0f} % of the slowest 1 %")
    print(f"throughput in slow buckets {rate(slow):,.0f}/s, in the others {rate(fast):,.0f}/s")


if __name__ == "__main__":
    main()
