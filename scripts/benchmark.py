#!/usr/bin/env python3
"""Throughput benchmark: the table of the throughput issue, measured and printed.

    scripts/benchmark.py [--seconds 10] [--soak-minutes 10] [--quick] [--db URL] [--pg-port 25888]
                         [--only TEXT] [--server PATH[,PATH...]] [--no-floor] [--repeat N] [--bin DIR]
    scripts/benchmark.py --sustained 60 [--db URL] [--pg-port 25888] [--bin DIR]
    scripts/benchmark.py --tls [--seconds 10] [--repeat N] [--quick] [--db URL] [--pg-port 25888] [--bin DIR]

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
Without --db a private PostgreSQL is started in .local/bench-pg on port 25888 (--pg-port)
(scripts/local-pg.sh), and stopped at the end if this run started it (one already running there
is used and left running). Every exchange-server and exchange-floor it starts is stopped when it
ends, also on an exception, Ctrl-C or SIGTERM. The bench's trading accounts are 900000000 up
(exchange-client bench --account-base), apart from the examples' 1001/1002.
Before the first row it prints a legend: what each column and line means and where the targets
come from; the last line counts the targets met and says what to do next.
--server runs each throughput case once per listed server binary, one after the other (e.g. a
build of another commit beside this one, for before/after figures from the same run); in the
cases measured against the floor the binaries alternate instead, round by round with one floor
run per round (--repeat rounds), so a before/after comparison is not skewed by the machine
getting busier or quieter during the run; every other round the floor runs first.

The durable floor: for the cases the throughput issues compare with it ("persistent sessions,
1 order/request, 64 clients": at least 0.8 of the floor, and a p99 at most 1.5 times the
floor's; "1 order/request, 1 request/connection, 16 clients": at least 0.95 of the floor),
exchange-floor (build/bin) runs
right after the server (before it in every other round of --repeat), with the same concurrency
model and the same bench arguments, on a database of its own (exchange_floor, on the same cluster, --reset). The floor is the server's
framing, connection handling, concurrency model and group commit (one journal row per request,
one transaction per batch, synchronous_commit on) with no XML parsing and no matching: what a
durable request/reply costs on this machine. Three more lines follow the server's row and its
CPU split: the floor's requests/s and p99, its CPU split (the "floor" column is the
exchange-floor process), and the ratio server/floor with its target (ok/MISSED), which counts
among the targets. On a shared machine only a ratio from the same run means anything.
--repeat N alternates server and floor N times for those cases, prints every round, and
judges the server's row and the ratio by their medians. --no-floor skips the floor.
--bin DIR takes exchange-server, exchange-floor and exchange-client from DIR (default
build/bin).

--sustained SECONDS runs only the sustained case instead: persistent sessions, 64 clients,
1 order/request (reactor) for that long, with the server's /metrics (--admin-port) read every
250 ms. It prints throughput and CPU split, then the projection lag (journal entries, rows and
seconds behind: exchange_projection_lag_*) at the start, middle and end of the run (the highest
in each third, since the lag rises while effects gather and drops at each write, and the last
sample of each), how long the projection took to catch up after the load stopped, and whether
the lag stayed bounded: the last third's highest within 1.5 times the first third's plus half a
second's worth. Exit status 1 if it grew.

--tls runs only the TLS comparison instead: plaintext against TLS with a client certificate,
side by side, for the persistent case of the table (64 clients, 1 order/request, reactor) and
the one-shot case (16 clients, one request per connection, pool) with TLS session resumption on
and off (exchange-client bench --tls-resume), and resumed over TLS 1.2 (--tls-max-version 1.2:
session ids, no new key exchange). Every leg's server authenticates (--principals),
so that authorization costs the same on both sides: the plaintext leg's bench logs on with an
API key (--principal bench --api-key-file: allowed over plaintext from loopback only), the TLS
legs' bench presents a client certificate (CN=bench) to a server started with --tls-cert,
--tls-key and --tls-client-ca. At the start it makes, with the `openssl` command in a temporary
directory, a CA, a server certificate for IP 127.0.0.1 and the client's (EC P-256), a principals
file (`bench admin,trade * SHA256-OF-KEY`) and the random key's file; the directory is removed
at the end. Each round runs every leg of a case, plaintext first in odd rounds and the legs in
reverse (TLS first) in even ones (--repeat rounds); every round is printed, with the bench's
TLS handshake counts and the CPU split. A table of medians ends the run: each TLS leg beside its
plaintext reference, with the median over the rounds of TLS/plaintext throughput (same round)
and its target (issue 38): persistent at least 0.9, one-shot with resumption at least 0.5;
one-shot with full handshakes is reported without a target. --quick: 2 s per leg.
"""
import argparse
import os
import resource
import shutil
import signal
import statistics
import sys
import tempfile
import textwrap
import threading
import time

import harness
from harness import (ROOT, Postgres, Reaper, Server, cpu_model, free_port, load1, make_credentials, metrics,
                     proc_status, process_cpu_s, security_flags, start_local_pg)

BIN = os.path.join(ROOT, "build", "bin")
SERVER = os.path.join(BIN, "exchange-server")
CLIENT = os.path.join(BIN, "exchange-client")
FLOOR = os.path.join(BIN, "exchange-floor")
PORT = 24555  # main() picks a free one: other checkouts may be benchmarking on this machine
FLOOR_DB = "exchange_floor"  # the floor's own database: it writes a journal table of its own
PG_DIR = os.path.join(ROOT, ".local", "bench-pg")
PG_PORT = 25888
# Stops every server, floor and PostgreSQL this run started, however it ends (main()).
REAPER = Reaper("benchmark")

# Cases compared with the durable floor: name -> (least server/floor throughput ratio, most
# server/floor p99 ratio), both judged on the medians over the rounds.
FLOOR_TARGETS = {
    "persistent sessions, 1 order/request, 64 clients": (0.8, 1.5),
    "1 order/request, 1 request/connection, 16 clients": (0.95, None),
}


def start_server(db, model, pin=None, extra=(), server=None):
    return start(server or SERVER, "exchange-server", "the server", db, model, pin, extra)


def start_floor(db, model):
    """exchange-floor in the server's place (same port, same model), on its own database."""
    return start(FLOOR, "exchange-floor", "exchange-floor", db, model)


def start(binary, name, what, db, model, pin=None, extra=()):
    """`binary` on PORT in `model` on a fresh database (pinned with taskset -c `pin` if given),
    its warnings on this script's stderr; the harness Server, once it listens. REAPER stops it
    however the run ends; `what` names it in the errors."""
    server = Server(binary, db, PORT, log=None)
    REAPER.process(server.start("--concurrency", model, "--reset", "--log-level", "warn", *extra, pin=pin), name)
    if not server.wait_listening(10, pause=0.05):
        if not server.alive():
            raise SystemExit(f"benchmark: {what} exited with status {server.proc.returncode} before listening")
        raise SystemExit(f"benchmark: {what} did not start")  # main() stops it
    return server


def stop_server(server):
    REAPER.stop(server.proc)  # SIGTERM, SIGKILL after 30 s


def measure(server, seconds, bargs, pg, label="server", dbname=None):
    """One bench run against a started server (or floor), which it stops: (report, CpuSplit)."""
    split = CpuSplit(pg, server.pid, label, dbname, per="item" if "create" in bargs else "order")
    try:
        rep = bench(seconds, bargs)
        # The CPU counters cover the warm-up too: count its orders (or created items).
        served = max(rep["ok"] + rep["rejected"], 1)
        split.finish(rep["items"] + rep["warmup_requests"] * rep["items"] / served)
    finally:
        stop_server(server)
    split.commits_after_stop()
    return rep, split


def bench(seconds, args):
    """`exchange-client bench` on PORT for `seconds` after 1 s of warm-up; its report."""
    return harness.bench(CLIENT, PORT, "--duration", str(seconds), "--warmup", "1", *args)


def children_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class CpuSplit:
    """CPU of server, PostgreSQL and load generator over one case, and PostgreSQL's commits.

    `label` names the served process's column ("floor" for exchange-floor), `dbname` the
    database whose commits are counted (default: the URL's)."""

    def __init__(self, pg, server_pid, label="server", dbname=None, per="order"):
        self.pg, self.pid, self.label, self.dbname = pg, server_pid, label, dbname or pg.dbname
        self.per = per  # what the figures are per: "order", or "item" in the create case
        self.t0 = time.monotonic()
        self.srv0, self.pg0, self.cli0 = process_cpu_s(server_pid), pg.cpu_seconds() or 0, children_cpu_s()
        self.commits0 = pg.commits([self.dbname]) or 0

    def finish(self, orders):
        wall = time.monotonic() - self.t0
        srv = process_cpu_s(self.pid) - self.srv0  # before the server stops
        pgcpu = (self.pg.cpu_seconds() or 0) - self.pg0
        cli = children_cpu_s() - self.cli0
        self.wall, self.orders, self.cpu = wall, orders, {self.label: srv, "postgres": pgcpu, "client": cli}

    def commits_after_stop(self):
        self.commits = (self.pg.commits([self.dbname]) or 0) - self.commits0

    def line(self):
        n = max(self.orders, 1)
        parts = [f"{k} {v / n * 1e6:.1f} µs/{self.per} ({v / self.wall * 100:.0f}% of a core)"
                 for k, v in self.cpu.items()]
        total = sum(self.cpu.values())
        return (f"    cpu: {', '.join(parts)}; all {total / n * 1e6:.1f} µs/{self.per}, "
                f"{total / self.wall / os.cpu_count() * 100:.0f}% of {os.cpu_count()} cores; "
                f"commits {self.commits / n * 1000:.1f} per 1,000 {self.per}s")


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

# --tls: cases of CASES (same load, same model) run plaintext and with TLS. Every leg's server
# has --principals, so authorization costs the same: the plaintext leg logs on with an API key,
# the TLS legs with a client certificate. Case -> its TLS legs: (label, the bench's TLS flags
# beyond the certificate, least TLS/plaintext throughput ratio judged on the medians, or None:
# reported, no target).
TLS_CASES = {
    "persistent sessions, 1 order/request, 64 clients": [("TLS, client certificate", ["--tls-resume", "on"], 0.9)],
    "1 order/request, 1 request/connection, 16 clients": [
        ("TLS 1.3, resumption on", ["--tls-resume", "on"], 0.5),
        ("TLS 1.2, resumption on (session ids)", ["--tls-resume", "on", "--tls-max-version", "1.2"], 0.5),
        ("TLS, full handshakes (resumption off)", ["--tls-resume", "off"], None)],
}
PLAIN_LEG = ("plaintext, key logon", None, None)  # every case's reference, first in odd rounds


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10, help="measured seconds per case (default 10)")
    ap.add_argument("--soak-minutes", type=float, default=10, help="length of the memory case (default 10)")
    ap.add_argument("--quick", action="store_true",
                    help="2 s per case, 30 s memory case: a smoke test, not a measurement")
    ap.add_argument("--db", help="database URL (default: private PostgreSQL in .local/bench-pg)")
    ap.add_argument("--pg-port", type=int, default=PG_PORT,
                    help=f"port of the private PostgreSQL when it is started here (default {PG_PORT})")
    ap.add_argument("--only", help="run only cases whose name contains this text")
    ap.add_argument("--server", help="comma-separated server binaries to compare (default: build/bin)")
    ap.add_argument("--no-floor", action="store_true", help="skip the durable floor (exchange-floor) runs")
    ap.add_argument("--repeat", type=int, default=1,
                    help="alternate server and floor this many times in the floor cases; medians judged")
    ap.add_argument("--sustained", type=float, metavar="SECONDS",
                    help="run only the sustained case: persistent sessions, 64 clients, 1 order/request for this "
                         "long, printing the projection lag (from /metrics) at the start, middle and end and "
                         "whether it stayed bounded")
    ap.add_argument("--tls", action="store_true",
                    help="run only the TLS comparison: plaintext against TLS with a client certificate, persistent "
                         "(64 clients) and one-shot (16 clients, resumption on and off, TLS 1.3 and 1.2), legs alternating round by "
                         "round (--repeat), TLS/plaintext judged by medians")
    ap.add_argument("--bin", help="directory of exchange-server, exchange-floor, exchange-client (default build/bin)")
    args = ap.parse_args()
    seconds = 2 if args.quick else args.seconds
    soak = 0.5 if args.quick else args.soak_minutes
    global PORT, SERVER, CLIENT, FLOOR
    PORT = free_port()
    if args.bin:
        SERVER, CLIENT, FLOOR = (os.path.join(args.bin, b) for b in ("exchange-server", "exchange-client",
                                                                      "exchange-floor"))
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    if args.tls and (args.sustained or args.only or args.server):
        ap.error("--tls runs its own cases: not with --sustained, --only or --server")
    if args.tls and not shutil.which("openssl"):
        ap.error("--tls makes its certificates with the openssl command, which is not on PATH")
    if not args.tls and not args.no_floor and not os.access(FLOOR, os.X_OK):
        ap.error(f"{FLOOR} is missing: build it (target exchange-floor) or pass --no-floor")

    try:
        with REAPER:
            return run(args, seconds, soak)
    except KeyboardInterrupt:
        print("benchmark: interrupted (Ctrl-C); everything it started has been stopped", flush=True)
        return 130
    except SystemExit as e:
        if e.code == 128 + signal.SIGTERM:  # Reaper turned SIGTERM into this
            print("benchmark: terminated (SIGTERM); everything it started has been stopped", flush=True)
        raise


def run(args, seconds, soak):
    if args.db:
        db = args.db
    else:
        db, started = start_local_pg(PG_DIR, args.pg_port, REAPER)
        where = os.path.relpath(PG_DIR, ROOT)
        print(f"benchmark: PostgreSQL in {where} (port {args.pg_port}): "
              + ("started by this run, stopped at its end" if started
                 else "already running, used and left running"), flush=True)
    rows = []
    pg = Postgres(db)
    if args.sustained:
        return sustained(args, db, pg)
    if args.tls:
        return tls_comparison(args, db, pg, seconds)
    floor_db = None if args.no_floor else pg.ensure_database(FLOOR_DB)

    def report(name, model, value, unit, target, detail, ok, counted=True, case=None):
        """One row; `case` names the case a ratio row belongs to (for the last lines)."""
        if counted:
            what = f"{name.strip()} in \"{case}\" [{model}]" if case else f"{name} [{model}]"
            rows.append((what, model, value, unit, target, detail, ok, case or name))
        print(f"{name:<55} {model:<9} {value:>10} {unit:<9} target {target:<9} {'ok' if ok else 'MISSED'}  {detail}",
              flush=True)

    def server_row(name, model, unit, target, value, p99, errors, counted=True, note=""):
        p99_rule = name.startswith("1 order")  # these cases also need p99 <= 10 ms
        ok = value >= target and (not p99_rule or p99 <= 10)
        report(name, model, f"{value:,.0f}", unit, f">={target:,}",
               f"p99 {p99:.2f} ms{' (target <= 10)' if p99_rule else ''}, errors {errors}{note}", ok, counted)

    def floor_case(name, model, bargs, unit, target, binaries):
        """Each server binary, then the floor, --repeat times (with several binaries, rounds of
        all of them and one floor, so each is compared with floors measured between its own
        rounds); then each binary's row and its ratio."""
        least, p99_max = FLOOR_TARGETS[name]
        rounds = {binary: [] for binary in binaries}
        floors = []
        for i in range(args.repeat):
            tag = f" [round {i + 1}/{args.repeat}]" if args.repeat > 1 else ""

            def run_floor():
                frep, fsplit = measure(start_floor(floor_db, model), seconds, bargs, pg, "floor", FLOOR_DB)
                print(f"{'  floor (exchange-floor, same model and bench)':<55} {model:<9} "
                      f"{frep['throughput_items_ps']:>10,.0f} {'req/s':<9} p99 {frep['latency_ms']['p99']:.2f} ms, "
                      f"errors {frep['error_replies'] + frep['connection_errors']}{tag}", flush=True)
                print(fsplit.line(), flush=True)
                floors.append((frep["throughput_items_ps"], frep["latency_ms"]["p99"]))

            # Every other round the floor goes first: whatever one run leaves the next (a
            # checkpoint, autovacuum, a machine getting busier) then falls on each side in turn.
            floor_first = i % 2 == 1
            if floor_first:
                run_floor()
            for binary in binaries:
                if len(binaries) > 1:
                    print(f"server: {binary}", flush=True)
                rep, split = measure(start_server(db, model, server=binary), seconds, bargs, pg)
                p99 = rep["latency_ms"]["p99"]
                errors = rep["error_replies"] + rep["connection_errors"]
                # With one round this is the usual row; with more, every round is shown and the
                # medians below are what counts.
                server_row(name, model, unit, target, rep["throughput_items_ps"], p99, errors,
                           counted=args.repeat == 1, note=tag)
                print(split.line(), flush=True)
                rounds[binary].append((rep["throughput_items_ps"], p99, errors))
            if not floor_first:
                run_floor()
        floor_p99 = statistics.median(f[1] for f in floors)
        for binary in binaries:
            if len(binaries) > 1:
                print(f"server: {binary}", flush=True)
            values = [r[0] for r in rounds[binary]]
            p99s = [r[1] for r in rounds[binary]]
            ratios = [r[0] / f[0] if f[0] else 0.0 for r, f in zip(rounds[binary], floors)]
            if args.repeat > 1:
                server_row(name, model, unit, target, statistics.median(values), statistics.median(p99s),
                           sum(r[2] for r in rounds[binary]), note=f" (medians of {args.repeat} rounds)")
            ratio, p99 = statistics.median(ratios), statistics.median(p99s)
            ok = ratio >= least and (p99_max is None or p99 <= p99_max * floor_p99)
            want = f">={least}" + (f", p99<={p99_max:g}x" if p99_max is not None else "")
            detail = (f"{statistics.median(values):,.0f} vs {statistics.median(f[0] for f in floors):,.0f}/s"
                      + (f", p99 {p99:.2f} vs {floor_p99:.2f} ms ({p99 / floor_p99 if floor_p99 else 0:.1f}x)"
                         if p99_max is not None else ""))
            if args.repeat > 1:
                detail += f"; median of {', '.join(f'{r:.2f}' for r in ratios)}"
            report("  server / floor", model, f"{ratio:.2f}x", "of floor", want, detail, ok, case=name)

    print(f"benchmark: {seconds:g} s per case after 1 s of warm-up; {machine()}", flush=True)
    selected = [c[0] for c in CASES if not args.only or args.only in c[0]]
    print(legend(args, seconds, soak, floor=bool(floor_db) and any(n in FLOOR_TARGETS for n in selected),
                 cores=not args.only or "core" in args.only, memory=not args.only or "memory" in args.only),
          flush=True)
    servers = args.server.split(",") if args.server else [SERVER]
    floor_cases_done = set()
    for (name, model, bargs, unit, target), binary in [(c, b) for c in CASES for b in servers]:
        if args.only and args.only not in name:
            continue
        if floor_db and name in FLOOR_TARGETS:
            if name not in floor_cases_done:  # every binary at once, in alternating rounds
                floor_cases_done.add(name)
                floor_case(name, model, bargs, unit, target, servers)
            continue
        if len(servers) > 1:
            print(f"server: {binary}", flush=True)
        rep, split = measure(start_server(db, model, server=binary), seconds, bargs, pg)
        server_row(name, model, unit, target, rep["throughput_items_ps"], rep["latency_ms"]["p99"],
                   rep["error_replies"] + rep["connection_errors"])
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
                samples.append(proc_status(server.pid).get("VmRSS", 0) / 1024)
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

    print(verdict(args, rows), flush=True)
    return 0


LAG_METRICS = ("exchange_projection_lag_entries", "exchange_projection_lag_rows", "exchange_projection_lag_seconds",
               "exchange_journal_seq")


def lag_metrics(admin):
    """The projection's gauges (LAG_METRICS) from the server's /metrics: {name: value}."""
    m = metrics(admin, timeout=2)
    return {name: m[name] for name in LAG_METRICS if name in m}


def sustained(args, db, pg):
    """The persistent 64-client case for --sustained seconds, with the projection lag sampled
    every 250 ms from /metrics. The lag is a sawtooth (effects gather, then one write catches
    up), so each third of the run is summarised by its highest lag; bounded means the last
    third's highest lag is no more than 1.5 times the first third's plus half a second's worth
    (entries and rows at the run's rate, or 0.5 s): a projection that cannot keep up shows as a
    lag that keeps growing."""
    seconds = args.sustained
    admin = free_port()
    model, bargs = "reactor", ["--clients", "64", "--persistent"]
    print(f"benchmark: sustained case, {seconds:g} s after 1 s of warm-up: persistent sessions, 64 clients, "
          f"1 order/request, {model}; projection lag from /metrics every 250 ms; machine: {os.cpu_count()} "
          f"cores, load average {load1()}", flush=True)
    server = start_server(db, model, extra=["--admin-port", str(admin)])
    samples = []  # (seconds since the bench started, {metric: value})
    stop = threading.Event()

    def sample(t0):
        while not stop.wait(0.25):
            try:
                samples.append((time.monotonic() - t0, lag_metrics(admin)))
            except OSError:
                pass

    t = threading.Thread(target=sample, args=(time.monotonic(),))
    t.start()
    try:
        split = CpuSplit(pg, server.pid)
        rep = bench(seconds, bargs)
        served = max(rep["ok"] + rep["rejected"], 1)
        split.finish(rep["items"] + rep["warmup_requests"] * rep["items"] / served)
        stop.set()
        t.join()
        # How long the projection takes to catch up once the load stops.
        ended, caught_up = time.monotonic(), None
        while time.monotonic() - ended < 30:
            m = lag_metrics(admin)
            if m.get("exchange_projection_lag_entries", 1) == 0:
                caught_up = time.monotonic() - ended
                break
            time.sleep(0.05)
    finally:
        stop.set()
        t.join()
        stop_server(server)
    split.commits_after_stop()
    measured = [(at, m) for at, m in samples if at >= 1.0 and len(m) == len(LAG_METRICS)]
    if len(measured) < 6:
        print("benchmark: too few /metrics samples to judge the lag", flush=True)
        return 1
    rate = rep["throughput_items_ps"]
    print(f"{'sustained: persistent sessions, 64 clients':<55} {model:<9} {rate:>10,.0f} orders/s  "
          f"p99 {rep['latency_ms']['p99']:.2f} ms, errors {rep['error_replies'] + rep['connection_errors']}",
          flush=True)
    print(split.line(), flush=True)
    thirds = [measured[i * len(measured) // 3:(i + 1) * len(measured) // 3] for i in range(3)]
    highest = []
    for name, part in zip(("start", "middle", "end"), thirds):
        top = {k: max(m[k] for _, m in part) for k in LAG_METRICS[:3]}
        highest.append(top)
        print(f"  projection lag, {name:<6} ({part[0][0]:5.1f}-{part[-1][0]:5.1f} s): highest "
              f"{top['exchange_projection_lag_entries']:>8,.0f} entries, {top['exchange_projection_lag_rows']:>9,.0f} "
              f"rows, {top['exchange_projection_lag_seconds']:5.2f} s behind; at {part[-1][0]:5.1f} s: "
              f"{part[-1][1]['exchange_projection_lag_entries']:,.0f} entries, "
              f"{part[-1][1]['exchange_projection_lag_rows']:,.0f} rows", flush=True)
    rows_per_entry = (highest[0]["exchange_projection_lag_rows"] / highest[0]["exchange_projection_lag_entries"]
                      if highest[0]["exchange_projection_lag_entries"] else 1.0)
    slack = {"exchange_projection_lag_entries": rate * 0.5,
             "exchange_projection_lag_rows": rate * 0.5 * rows_per_entry, "exchange_projection_lag_seconds": 0.5}
    growing = [k for k in LAG_METRICS[:3] if highest[2][k] > 1.5 * highest[0][k] + slack[k]]
    print(f"  caught up {caught_up:.2f} s after the load stopped" if caught_up is not None
          else "  NOT caught up 30 s after the load stopped", flush=True)
    bounded = not growing and caught_up is not None
    print(f"benchmark: projection lag {'bounded' if bounded else 'GROWING'} over {seconds:g} s "
          f"(end third's highest at most 1.5x the start third's plus half a second's worth"
          + (f"; grew: {', '.join(growing)}" if growing else "") + f"); load average now {load1()}", flush=True)
    return 0 if bounded else 1


# ---- --tls: plaintext against TLS with a client certificate ---------------------------------

def tls_comparison(args, db, pg, seconds):
    """--tls: every case of TLS_CASES in alternating rounds, then the medians and the verdict."""
    tmp = tempfile.mkdtemp(prefix="benchmark-tls-")
    REAPER.call(lambda: shutil.rmtree(tmp, ignore_errors=True), f"the temporary directory {tmp}")
    try:
        creds = make_credentials(tmp)
    except RuntimeError as e:
        raise SystemExit(f"benchmark: {e}")
    print(f"benchmark: TLS comparison, {seconds:g} s per leg after 1 s of warm-up; {machine()}", flush=True)
    print(tls_legend(args, seconds), flush=True)
    results = []  # (case, model, legs, {leg label: [leg_figures() of each round]})
    for name, tls_legs in TLS_CASES.items():
        model, bargs = next((c[1], c[2]) for c in CASES if c[0] == name)  # the table's load and model
        legs = [PLAIN_LEG] + tls_legs
        results.append((name, model, legs, tls_rounds(args, seconds, db, pg, creds, name, model, bargs, legs)))
    rows = tls_table(args, results)
    print(verdict(args, rows), flush=True)
    return 0


def tls_rounds(args, seconds, db, pg, creds, name, model, bargs, legs):
    """Every leg of one case, --repeat rounds; in even rounds the legs run in reverse (TLS
    first), so that drift during the run falls on each side in turn. Prints every leg's run;
    returns {label: [leg_figures() of each round]}."""
    print(f"{name} [{model}]:", flush=True)
    runs = {label: [] for label, _, _ in legs}
    for i in range(args.repeat):
        tag = f" [round {i + 1}/{args.repeat}]" if args.repeat > 1 else ""
        for label, tls_flags, _ in legs if i % 2 == 0 else legs[::-1]:
            server_flags, bench_flags = security_flags(creds, tls_flags)
            rep, split = measure(start_server(db, model, extra=server_flags), seconds, bargs + bench_flags, pg)
            f = leg_figures(rep, split)
            runs[label].append(f)
            handshakes = f", tls handshakes {f['handshakes']} ({f['resumed']} resumed)" if tls_flags else ""
            print(f"  {label:<53} {model:<9} {f['rate']:>10,.0f} {'orders/s':<9} p50 {f['p50']:.2f} ms, "
                  f"p99 {f['p99']:.2f} ms, errors {f['errors']}{handshakes}{tag}", flush=True)
            print(split.line(), flush=True)
    return runs


def leg_figures(rep, split):
    """One leg's run: throughput, latency (ms), errors, TLS handshakes (the bench's counts,
    warm-up and setup included; None in plaintext) and CPU per order (µs) by process."""
    n = max(split.orders, 1)
    cpu = {k: v / n * 1e6 for k, v in split.cpu.items()}
    return {"rate": rep["throughput_items_ps"], "p50": rep["latency_ms"]["p50"], "p99": rep["latency_ms"]["p99"],
            "errors": rep["error_replies"] + rep["connection_errors"], "handshakes": rep.get("tls_handshakes"),
            "resumed": rep.get("tls_resumed"), **cpu, "all": sum(cpu.values())}


TLS_HEADER = (f"  {'case, leg':<39} {'model':<8} {'orders/s':>9} {'p50 ms':>7} {'p99 ms':>7} {'errors':>6}  "
              f"{'µs/order:':>9} {'server':>6} {'pg':>6} {'client':>6} {'all':>6}  {'tls handshakes':<22} "
              f"{'TLS/plain':>9}  target")


def tls_table(args, results):
    """The medians over the rounds: each case's plaintext leg, then each TLS leg with the
    median of its per-round ratios to the plaintext leg and its target. Returns the judged
    rows, as run() keeps them (for verdict())."""
    print(f"benchmark: TLS against plaintext, "
          + (f"medians of {args.repeat} rounds (each above)" if args.repeat > 1 else "one round") + ":", flush=True)
    print(TLS_HEADER)
    rows = []
    for name, model, legs, runs in results:
        print(f"{name}:")
        plain = runs[PLAIN_LEG[0]]
        print(tls_row(PLAIN_LEG[0], model, plain).rstrip(), flush=True)
        for label, _, least in legs[1:]:
            ratios = [t["rate"] / p["rate"] if p["rate"] else 0.0 for t, p in zip(runs[label], plain)]
            ratio = statistics.median(ratios)
            ok = least is None or ratio >= least
            judged = (f"{ratio:>8.2f}x  " + (f">={least:<4} {'ok' if ok else 'MISSED'}" if least else "none (reported)")
                      + (f"  ratios {', '.join(f'{r:.2f}' for r in ratios)}" if args.repeat > 1 else ""))
            print(tls_row(label, model, runs[label]) + judged, flush=True)
            if least is not None:
                rows.append((f"{label} / plaintext in \"{name}\" [{model}]", model, f"{ratio:.2f}x", "of plaintext",
                             f">={least}", judged, ok, name))
    return rows


def tls_row(label, model, runs):
    """One leg's medians (errors: the sum over the rounds), up to the ratio column."""
    med = {k: statistics.median(r[k] for r in runs) for k in ("rate", "p50", "p99", "server", "postgres", "client",
                                                              "all")}
    handshakes = "-"
    if runs[0]["handshakes"] is not None:
        handshakes = (f"{statistics.median(r['handshakes'] for r in runs):,.0f} "
                      f"({statistics.median(r['resumed'] for r in runs):,.0f} resumed)")
    return (f"  {label:<39} {model:<8} {med['rate']:>9,.0f} {med['p50']:>7.2f} {med['p99']:>7.2f} "
            f"{sum(r['errors'] for r in runs):>6}  {'':>9} {med['server']:>6.1f} {med['postgres']:>6.1f} "
            f"{med['client']:>6.1f} {med['all']:>6.1f}  {handshakes:<22} ")


def tls_legend(args, seconds):
    """What the --tls lines mean; printed before the first."""
    out = [quick_note(f"{seconds:g} s per leg")] if args.quick else []
    return "\n".join(out + [
        "How to read the lines:",
        wrap("legs", "each case (the table's load and model) runs on a fresh server per leg, every one with "
                     "--principals: \"plaintext, key logon\" (the bench sends an API key logon; plaintext from "
                     "loopback) and the TLS legs (--tls-cert, --tls-key, --tls-client-ca; the bench presents a "
                     "client certificate whose CN is the principal), with --tls-resume on or off and, in one leg, --tls-max-version 1.2. Certificates "
                     "(EC P-256) and the principals file are made at the start in a temporary directory, removed "
                     "at the end."),
        wrap("rounds", "one line per leg and round: orders/s, p50 and p99 latency, errors (error replies + "
                       "connection errors, 0 expected), and the bench's TLS handshakes, N (M resumed), warm-up and "
                       "setup included. Odd rounds run plaintext first, even rounds the legs in reverse (TLS "
                       "first)."),
        wrap("cpu:", CPU_LEGEND),
        wrap("table", "medians over the rounds (errors: summed); µs/order = CPU per order of the server, "
                      "PostgreSQL, the client and all three. TLS/plain: the median of each round's TLS orders/s "
                      "divided by the plaintext leg's of the same round. Targets (issue 38): persistent TLS >= 0.9 "
                      "of plaintext, one-shot with resumption >= 0.5; full handshakes: reported, no target."),
    ])


def machine():
    """Cores, CPU model and load average, for the first line."""
    return f"machine: {os.cpu_count()} cores, {cpu_model()}; load average {load1()}"


def wrap(key, text, width=100, indent=14):
    """One legend entry: the key, then the text wrapped under it."""
    return textwrap.fill(text, width, initial_indent=f"  {key:<{indent - 2}}", subsequent_indent=" " * indent)


CPU_LEGEND = ("CPU time per order (per item in the create case) during the case, of the server, of PostgreSQL (all "
              "its processes) and of the load generator (client), with the share of one core each kept busy; then "
              "all three together against all cores, and PostgreSQL commits per 1,000 orders (one commit = one "
              "group-commit round trip).")


def quick_note(lengths):
    """The --quick warning, `lengths` saying how long each run was."""
    return textwrap.fill(
        f"--quick: {lengths}. This is a SMOKE TEST that every case runs end to end, NOT A MEASUREMENT: on this "
        "shared machine such short runs swing by a third and more from one run to the next. Do not quote these "
        "figures, and do not read ok/MISSED as a verdict on the server.", 100, initial_indent="benchmark: ",
        subsequent_indent="  ")


def legend(args, seconds, soak, floor, cores, memory):
    """What every line below means; printed before the first row."""
    out = [quick_note(f"{seconds:g} s per case (memory case {soak * 60:g} s)")] if args.quick else []
    out += [
        "How to read the rows:",
        wrap("row", "case (the load), the server's --concurrency model, the value and its unit, the target, ok or "
                    "MISSED, details. The value is what `exchange-client bench` measured: orders (or created items) "
                    "per second over the measured seconds, 200 accounts, 20 symbols, random limit orders. p99 = "
                    "99th-percentile latency of those requests; errors = error replies + connection errors (0 "
                    "expected)."),
        wrap("target", "the goal for this case on this 2-core machine, from the project's throughput table "
                       "(CASES and FLOOR_TARGETS at the top of scripts/benchmark.py). A \"1 order/request\" case "
                       "also needs p99 <= 10 ms."),
        wrap("ok/MISSED", "ok: the target was met in this run. MISSED: the value was below the target (or p99 "
                          "above it) in this run; it says nothing beyond this run."),
        wrap("cpu:", CPU_LEGEND),
    ]
    if floor:
        out += [
            wrap("floor", "exchange-floor run in the server's place, same model, same load: a durable "
                          "request/reply (each request journaled and committed in PostgreSQL before its reply) "
                          "with no XML parsing and no matching, i.e. the least any durable exchange pays on this "
                          "machine. Its own cpu: line follows (the \"floor\" column is exchange-floor)."),
            wrap("x of floor", "server / floor: the exchange's throughput divided by exchange-floor's in the same "
                               "run (1.00x = as fast as the floor). Its target is the least share of the floor the "
                               "exchange must reach; it counts among the targets. On a shared machine only a ratio "
                               "from one run means anything."),
        ]
    if cores:
        out.append(wrap("speed-up", "persistent 64-client throughput with the server free on both cores divided "
                                    "by the same with the server pinned to one (taskset -c 0)."))
    if memory:
        out.append(wrap("MiB", "growth of the server's resident memory after the first third of the memory case; "
                               "the target is flat (under 8 MiB or 10 %)."))
    return "\n".join(out)


def verdict(args, rows):
    """The last lines: how many targets were met, and what to do next."""
    missed = [r for r in rows if not r[6]]
    line = f"benchmark: {len(rows) - len(missed)} of {len(rows)} targets met"
    if missed:
        line += " (MISSED: " + "; ".join(r[0].strip() for r in missed) + ")"
    load = load1()
    busy = f" (load average now {load} on {os.cpu_count()} cores)" if load is not None else ""
    if args.quick and args.tls:
        nxt = ("Next: that was a smoke test, not a measurement. For figures, run scripts/benchmark.py --tls "
               f"--repeat 3 without --quick (10 s per leg; ratios judged by medians of three rounds) on a quiet "
               f"machine{busy}.")
    elif args.quick:
        nxt = ("Next: that was a smoke test, not a measurement. For figures, run scripts/benchmark.py without "
               "--quick (10 s per case; --only TEXT for one case; --repeat 3 judges the floor ratios by medians of "
               f"three rounds) on a quiet machine{busy}.")
    elif missed:
        nxt = (f"Next: rerun what was missed alone when the machine is quiet{busy}; absolute figures drift from "
               "day to day on a shared machine, ratios within one run (to the floor, TLS/plaintext) much less. For example:")
        again = "--tls" if args.tls else f"--only '{missed[0][7]}'"
        return (line + "\n" + textwrap.fill(nxt, 100, subsequent_indent="  ")
                + f"\n  scripts/benchmark.py {again} --repeat 3")
    else:
        nxt = "Every target was met in this run."
    return line + "\n" + textwrap.fill(nxt, 100, subsequent_indent="  ")


if __name__ == "__main__":
    sys.exit(main())
