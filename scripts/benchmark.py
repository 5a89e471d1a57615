#!/usr/bin/env python3
"""Throughput benchmark: the table of the throughput issue, measured and printed.

    scripts/benchmark.py [--seconds 10] [--soak-minutes 10] [--quick] [--db URL] [--only TEXT]
                         [--server PATH[,PATH...]]

Every case starts exchange-server (build/bin) on a fresh database (--reset) in the model
named in the table, runs `exchange-client bench` on the same machine (workload: 200 accounts
with ample cash, 20 symbols, random limit orders half buys half sells, amounts 1-100, limits
uniform 90-110; PostgreSQL with its default durability), and prints one row per case with its
target. The 1-core case pins the server with `taskset -c 0` (PostgreSQL and the client stay
unpinned on both cores); the 2-core case lets it use both. The memory case runs the 16-client
case for --soak-minutes and samples the server's resident memory every 10 s. --quick runs
every case for 2 s and the memory case for 30 s (a smoke test, not a measurement).

Where the time goes: after each throughput case a second line gives the CPU per order (µs) of
the server (/proc/PID/stat), of PostgreSQL (postmaster, every backend live or reaped) and of
the load generator (its rusage), with the share of the machine's cores they kept busy, and
PostgreSQL's commits per 1,000 orders (one commit = one statement = one round trip of the
group commit).
Without --db a private PostgreSQL is started in .local/bench-pg (scripts/local-pg.sh).
--server runs each throughput case once per listed server binary, one after the other (e.g. a
build of another commit beside this one, for before/after figures from the same run).
"""
import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "writeup"))
from study.procs import CLK_TCK, Postgres  # noqa: E402  (the study's CPU accounting)
SERVER = os.path.join(ROOT, "build", "bin", "exchange-server")
CLIENT = os.path.join(ROOT, "build", "bin", "exchange-client")
PORT = 24555


def start_server(db, model, pin=None, extra=(), server=None):
    cmd = [server or SERVER, "--port", str(PORT), "--bind", "127.0.0.1", "--db", db, "--concurrency", model,
           "--reset", "--log-level", "warn", *extra]
    if pin:
        cmd = ["taskset", "-c", pin] + cmd
    proc = subprocess.Popen(cmd)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", PORT), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("benchmark: the server did not start")


def stop_server(proc):
    proc.terminate()
    proc.wait()


def bench(seconds, args):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([CLIENT, "bench", "--port", str(PORT), "--duration", str(seconds), "--warmup", "1",
                        "--no-progress", "--accounts", "200", "--symbols", "20", "--json", out.name, *args],
                       check=True, stdout=subprocess.DEVNULL)
        rep = json.load(open(out.name))["repetitions"][0]
    return rep


def process_cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / CLK_TCK


def children_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class CpuSplit:
    """CPU of server, PostgreSQL and load generator over one case, and PostgreSQL's commits."""

    def __init__(self, pg, server_pid):
        self.pg, self.pid = pg, server_pid
        self.t0 = time.monotonic()
        self.srv0, self.pg0, self.cli0 = process_cpu_s(server_pid), pg.cpu_seconds() or 0, children_cpu_s()
        self.commits0 = pg.commits([pg.dbname]) or 0

    def finish(self, orders):
        wall = time.monotonic() - self.t0
        srv = process_cpu_s(self.pid) - self.srv0  # before the server stops
        pgcpu = (self.pg.cpu_seconds() or 0) - self.pg0
        cli = children_cpu_s() - self.cli0
        self.wall, self.orders, self.cpu = wall, orders, {"server": srv, "postgres": pgcpu, "client": cli}

    def commits_after_stop(self):
        self.commits = (self.pg.commits([self.pg.dbname]) or 0) - self.commits0

    def line(self):
        n = max(self.orders, 1)
        parts = [f"{k} {v / n * 1e6:.1f} µs/order ({v / self.wall * 100:.0f}% of a core)"
                 for k, v in self.cpu.items()]
        total = sum(self.cpu.values())
        return (f"    cpu: {', '.join(parts)}; all {total / n * 1e6:.1f} µs/order, "
                f"{total / self.wall / os.cpu_count() * 100:.0f}% of {os.cpu_count()} cores; "
                f"commits {self.commits / n * 1000:.1f} per 1,000 orders")


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


CASES = [
    # (name, model, bench args, what is measured, target)
    ("1 order/request, 1 request/connection, 16 clients", "pool", ["--clients", "16"], "orders/s", 8000),
    ("same, 64 clients", "pool", ["--clients", "64"], "orders/s", 8000),
    ("5 orders/request, 1 request/connection, 16 clients", "pool",
     ["--clients", "16", "--orders-per-request", "5"], "orders/s", 20000),
    ("create (1 account + 1 position), 16 clients", "pool", ["--clients", "16", "--workload", "create"],
     "items/s", 12000),
    ("persistent sessions, 1 order/request, 64 clients", "reactor", ["--clients", "64", "--persistent"],
     "orders/s", 40000),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10, help="measured seconds per case (default 10)")
    ap.add_argument("--soak-minutes", type=float, default=10, help="length of the memory case (default 10)")
    ap.add_argument("--quick", action="store_true", help="2 s per case, 30 s memory case")
    ap.add_argument("--db", help="database URL (default: private PostgreSQL in .local/bench-pg)")
    ap.add_argument("--only", help="run only cases whose name contains this text")
    ap.add_argument("--server", help="comma-separated server binaries to compare (default: build/bin)")
    args = ap.parse_args()
    seconds = 2 if args.quick else args.seconds
    soak = 0.5 if args.quick else args.soak_minutes

    db = args.db or subprocess.run([os.path.join(ROOT, "scripts", "local-pg.sh"), "start",
                                    os.path.join(ROOT, ".local", "bench-pg"), "25888"],
                                   check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    rows = []
    pg = Postgres(db)

    def report(name, model, value, unit, target, detail, ok):
        rows.append((name, model, value, unit, target, detail, ok))
        print(f"{name:<55} {model:<9} {value:>10} {unit:<9} target {target:<9} {'ok' if ok else 'MISSED'}  {detail}",
              flush=True)

    print(f"benchmark: {seconds} s per case; machine: {os.cpu_count()} cores, "
          f"{open('/proc/cpuinfo').read().split('model name')[1].split(':')[1].splitlines()[0].strip()}")
    servers = args.server.split(",") if args.server else [SERVER]
    for (name, model, bargs, unit, target), binary in [(c, b) for c in CASES for b in servers]:
        if args.only and args.only not in name:
            continue
        if len(servers) > 1:
            print(f"server: {binary}", flush=True)
        server = start_server(db, model, server=binary)
        split = CpuSplit(pg, server.pid)
        try:
            rep = bench(seconds, bargs)
            # The CPU counters cover the warm-up too: count its orders (or created items).
            served = max(rep["ok"] + rep["rejected"], 1)
            split.finish(rep["items"] + rep["warmup_requests"] * rep["items"] / served)
        finally:
            stop_server(server)
        split.commits_after_stop()
        value = rep["throughput_items_ps"]
        p99 = rep["latency_ms"]["p99"]
        ok = value >= target and (not name.startswith("1 order") or p99 <= 10)
        report(name, model, f"{value:,.0f}", unit, f">={target:,}", f"p99 {p99:.2f} ms, errors "
               f"{rep['error_replies'] + rep['connection_errors']}", ok)
        print(split.line(), flush=True)

    if not args.only or "core" in args.only:
        rates = {}
        for pin in ("0", "0,1"):
            server = start_server(db, "reactor" if pin == "0" else "pool", pin=pin)
            try:
                rates[pin] = bench(seconds, ["--clients", "64", "--persistent"])["throughput_items_ps"]
            finally:
                stop_server(server)
        ratio = rates["0,1"] / rates["0"] if rates["0"] else 0
        report("server on 2 cores vs 1 core, persistent, 64 clients", "1c/2c", f"{ratio:.2f}x", "speed-up",
               ">=1.7x", f"{rates['0']:,.0f} vs {rates['0,1']:,.0f} orders/s", ratio >= 1.7)

    if not args.only or "memory" in args.only:
        server = start_server(db, "pool")
        samples = []
        open_orders = []  # resting orders, which the engine must keep in memory to match
        stop = threading.Event()

        def sample():
            while not stop.wait(10 if not args.quick else 3):
                samples.append(rss_mib(server.pid))
                try:
                    open_orders.append(int(pg.query(
                        "SELECT count(*) FROM orders WHERE open_amount > 0 AND canceled_at IS NULL")))
                except (RuntimeError, ValueError):
                    open_orders.append(None)

        t = threading.Thread(target=sample)
        t.start()
        try:
            bench(int(soak * 60), ["--clients", "16"])
        finally:
            stop.set()
            t.join()
            stop_server(server)
        first = len(samples) // 3
        warm = samples[first:] or samples
        growth = (warm[-1] - warm[0]) if warm else 0
        resting = open_orders[first:] or open_orders
        per_order = ""
        if len(resting) > 1 and None not in (resting[0], resting[-1]) and resting[-1] > resting[0]:
            per_order = (f"; resting orders {resting[0]:,} -> {resting[-1]:,}, "
                         f"{growth * 1048576 / (resting[-1] - resting[0]):.0f} bytes per added resting order")
        report(f"{soak:g}-minute run at 16 clients: resident memory after warm-up", "pool",
               f"{growth:+.1f}", "MiB", "flat", f"samples {', '.join(f'{s:.0f}' for s in samples)} MiB"
               + per_order, abs(growth) < max(8.0, 0.1 * (warm[0] if warm else 0)))

    missed = [r for r in rows if not r[6]]
    print(f"benchmark: {len(rows) - len(missed)} of {len(rows)} targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
