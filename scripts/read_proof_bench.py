#!/usr/bin/env python3
"""What proving a read costs: queries answered after a proof commit (the default) against
--reads-on-lease (docs/DURABILITY.md, "Reads"), in the same run.

    scripts/read_proof_bench.py [--seconds 5] [--repeat 3] [--clients 16] [--db URL]
                                [--pg-port 25888] [--bin DIR]

Two cases, each with the query-only workload of `exchange-client bench` (--workload query: the
setup places orders, then every request queries one of them): persistent sessions (reactor)
and one request per connection (pool). Each round runs both legs of a case on a fresh server
and database (--reset): "proof" (the default) and "on lease" (--reads-on-lease), in reverse
order every other round, so that drift during the run falls on each side in turn. Every run
prints queries/s, p50 and p99 latency, errors, and the proof commits per 1,000 queries (the
server's count at exit: several reads share one); the table at the end gives the medians and
proof/lease.
Without --db a private PostgreSQL is started in .local/bench-pg (port --pg-port) and stopped at
the end if this run started it. Everything it starts is stopped however it ends.
"""
import argparse
import os
import re
import statistics
import sys
import tempfile

import harness
from harness import ROOT, Reaper, Server, cpu_model, free_port, start_local_pg

REAPER = Reaper("read_proof_bench")
LEGS = [("proof", []), ("on lease", ["--reads-on-lease"])]
CASES = [
    ("persistent sessions, 1 query/request", "reactor", ["--persistent"]),
    ("1 query/request, 1 request/connection", "pool", []),
]


def run_leg(args, db, model, server_flags, bench_flags):
    """One server, one bench run of --seconds after 1 s of warm-up: its figures."""
    port = free_port()
    log = tempfile.NamedTemporaryFile(suffix=".log", prefix="read_proof_bench-")
    server = Server(os.path.join(args.bin, "exchange-server"), db, port, log=log.name)
    REAPER.process(server.start("--concurrency", model, "--reset", *server_flags), "exchange-server")
    if not server.wait_listening(10, pause=0.05):
        raise SystemExit(f"read_proof_bench: the server did not start: {server.log_tail()}")
    try:
        rep = harness.bench(os.path.join(args.bin, "exchange-client"), port, "--workload", "query",
                            "--clients", str(args.clients), "--duration", str(args.seconds), "--warmup", "1",
                            *bench_flags)
    finally:
        REAPER.stop(server.proc)
        server.close()
    # The server's own count at exit: "..., P of them read proofs alone".
    with open(log.name, errors="replace") as f:
        m = re.search(r"(\d+) of them read proofs alone", f.read())
    served = max(rep["ok"] + rep["rejected"] + rep["warmup_requests"], 1)
    return {"rate": rep["throughput_items_ps"], "p50": rep["latency_ms"]["p50"],
            "p99": rep["latency_ms"]["p99"], "errors": rep["error_replies"] + rep["connection_errors"],
            "commits": int(m.group(1)) / served * 1000 if m else float("nan")}


def show(label, f, tag=""):
    print(f"  {label:<10} {f['rate']:>9,.0f} queries/s  p50 {f['p50']:6.2f} ms  p99 {f['p99']:6.2f} ms  "
          f"errors {f['errors']}  commits {f['commits']:6.1f} per 1,000 queries{tag}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=5, help="measured seconds per run (default 5)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds per case (default 3)")
    ap.add_argument("--clients", type=int, default=16, help="bench clients (default 16)")
    ap.add_argument("--db", help="database URL (default: private PostgreSQL in .local/bench-pg)")
    ap.add_argument("--pg-port", type=int, default=25888, help="port of the private PostgreSQL (default 25888)")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"),
                    help="directory of exchange-server and exchange-client (default build/bin)")
    args = ap.parse_args()
    if args.repeat < 1 or args.seconds <= 0:
        ap.error("--repeat must be at least 1 and --seconds positive")
    try:
        with REAPER:
            return run(args)
    except KeyboardInterrupt:
        print("read_proof_bench: interrupted; everything it started has been stopped", flush=True)
        return 130


def run(args):
    db = args.db or start_local_pg(os.path.join(ROOT, ".local", "bench-pg"), args.pg_port, REAPER)[0]
    print(f"read_proof_bench: {args.seconds:g} s per run, {args.repeat} rounds, {args.clients} clients; "
          f"{cpu_model()}, {os.cpu_count()} cores", flush=True)
    table = []
    for name, model, bench_flags in CASES:
        print(f"{name} [{model}]:", flush=True)
        runs = {label: [] for label, _ in LEGS}
        for i in range(args.repeat):
            for label, server_flags in LEGS if i % 2 == 0 else LEGS[::-1]:
                f = run_leg(args, db, model, server_flags, bench_flags)
                runs[label].append(f)
                show(label, f, f"  [round {i + 1}/{args.repeat}]")
        table.append((name, model, runs))
    print("medians:", flush=True)
    for name, model, runs in table:
        med = {label: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for label, rs in runs.items()}
        print(f"{name} [{model}]:")
        for label, _ in LEGS:
            show(label, med[label])
        ratios = [p["rate"] / l["rate"] if l["rate"] else 0.0 for p, l in zip(runs["proof"], runs["on lease"])]
        print(f"  proof/lease throughput {statistics.median(ratios):.2f} (rounds: "
              f"{', '.join(f'{r:.2f}' for r in ratios)}); p50 {med['proof']['p50'] - med['on lease']['p50']:+.2f} ms, "
              f"p99 {med['proof']['p99'] - med['on lease']['p99']:+.2f} ms", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
