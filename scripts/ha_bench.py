#!/usr/bin/env python3
"""What high availability costs and what a failover looks like, measured on this machine.

    scripts/ha_bench.py [--seconds 10] [--rounds 2] [--failovers 3] [--build-dir build]

In one run, alternating so that the machine's background load hits every configuration alike:

1. Throughput and p99 of `exchange-client bench` (200 accounts, 20 symbols, random limit orders;
   the workloads of scripts/benchmark.py: 16 one-shot clients with 1 order per request, and 64
   persistent sessions) against
     single  one PostgreSQL 15 (scripts/local-pg.sh, .local/ha-bench-single, port 25495),
     sync    the Patroni cluster of scripts/ha-cluster.sh (.local/ha-bench, ports 25500+),
             synchronous_mode on: every commit waits for the standby's flush,
     async   the same cluster switched to synchronous_mode off (patronictl edit-config),
   each case on a fresh exchange (--reset), --rounds times; the table gives the median and the
   range.
2. The unavailability window of a failover: the bench runs against the synchronous cluster (16
   one-shot clients), the leader's postmaster is SIGKILLed after --kill-after seconds, Patroni
   promotes the synchronous standby, the server reconnects. From the bench's per-request CSV:
   the longest stretch without a successful reply (a reply is sent only after its commit, so
   this is the time without a commit), the requests refused meanwhile (error replies and
   connection errors), and from the server's log how it recovered. Repeated --failovers times
   (the killed node rejoins as the new standby each time, so leaders alternate).

Everything it starts (server, both clusters) is stopped at the end, also on Ctrl-C.
"""
import argparse
import csv
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import urllib.request

import harness
from harness import ROOT, Server, bench_command, cpu_model, local_pg

HA = os.path.join(ROOT, "scripts", "ha-cluster.sh")
HA_DIR = os.path.join(ROOT, ".local", "ha-bench")
SINGLE_DIR = os.path.join(ROOT, ".local", "ha-bench-single")
SINGLE_PORT = 25495
HA_BASE = 25500
SERVER_PORT = 24556

WORKLOADS = [
    ("16 one-shot clients, 1 order/request", ["--clients", "16"]),
    ("64 persistent sessions, 1 order/request", ["--clients", "64", "--persistent"]),
]


def log(msg):
    print(f"ha_bench: {msg}", file=sys.stderr, flush=True)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, **kw)


def last_line(text):
    return text.strip().splitlines()[-1]


def psql(url, sql):
    return run(["/usr/lib/postgresql/15/bin/psql", "-X", "-tA", url, "-c", sql],
               capture_output=True).stdout.strip()


def cluster_members():
    for api in (HA_BASE + 10, HA_BASE + 11):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{api}/cluster", timeout=2) as r:
                return json.load(r).get("members", [])
        except OSError:
            continue
    return []


def ha_up(sync):
    """Starts the cluster (or switches its mode) and checks the primary really is in that mode."""
    url = last_line(run([HA, "up", "--sync", sync, "--ports", str(HA_BASE), HA_DIR],
                        capture_output=True).stdout)
    want_sync = sync != "off"
    for _ in range(60):
        names = psql(url, "SHOW synchronous_standby_names")
        if bool(names) == want_sync:
            return url
        time.sleep(0.5)
    raise SystemExit(f"ha_bench: synchronous_standby_names is '{names}' in mode {sync}")


def wait_sync_standby(timeout=120):
    """After a failover: until the killed node is back as the synchronous standby."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        roles = {m.get("role") for m in cluster_members()}
        if "leader" in roles and "sync_standby" in roles:
            return
        time.sleep(1)
    raise SystemExit("ha_bench: no synchronous standby again after the failover")


def start_server(binary, db, logpath):
    """exchange-server on SERVER_PORT (pool, a fresh exchange: --reset), listening."""
    server = Server(binary, db, SERVER_PORT, log=logpath)
    server.start("--concurrency", "pool", "--reset", "--log-level", "info")
    if not server.wait_listening(30, pause=0.05):
        server.close()
        raise SystemExit(f"ha_bench: the server did not start (log: {logpath})")
    return server


def bench(client, seconds, args):
    return harness.bench(client, SERVER_PORT, "--duration", str(seconds), "--warmup", "1", *args)


def throughput(args, url_for):
    """{(config, workload): [(orders/s, p99 ms), ...]} over the rounds."""
    client = os.path.join(args.build_dir, "bin", "exchange-client")
    server_bin = os.path.join(args.build_dir, "bin", "exchange-server")
    results = {}
    for rnd in range(1, args.rounds + 1):
        for config in ("single", "sync", "async"):
            url = url_for(config)
            for wname, wargs in WORKLOADS:
                server = start_server(server_bin, url, os.path.join(args.logs, f"server-{config}.log"))
                try:
                    rep = bench(client, args.seconds, wargs)
                finally:
                    server.close()
                row = (rep["throughput_items_ps"], rep["latency_ms"]["p99"],
                       rep["error_replies"] + rep["connection_errors"])
                results.setdefault((config, wname), []).append(row)
                log(f"round {rnd} {config:<6} {wname}: {row[0]:,.0f} orders/s, p99 {row[1]:.2f} ms, "
                    f"errors {row[2]}")
    return results


def failover_once(args, url, n):
    client = os.path.join(args.build_dir, "bin", "exchange-client")
    server_bin = os.path.join(args.build_dir, "bin", "exchange-server")
    csv_path = os.path.join(args.logs, f"failover-{n}.csv")
    server_log = os.path.join(args.logs, f"server-failover-{n}.log")
    server = start_server(server_bin, url, server_log)
    duration = args.kill_after + 15
    cmd = bench_command(client, SERVER_PORT, "--duration", str(duration), "--warmup", "0", "--clients", "16",
                        "--csv", csv_path)
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        time.sleep(args.kill_after)
        killed = last_line(run([HA, "kill-leader", HA_DIR], capture_output=True).stdout)
        if proc.wait() != 0:
            raise SystemExit(f"ha_bench: the bench failed during failover {n}")
    finally:
        code = server.close()
    ok_ends, errors, total = [], 0, 0
    with open(csv_path) as f:
        for row in csv.DictReader(f):
            total += 1
            if row["status"] in ("ok", "rejected"):
                ok_ends.append(float(row["end_us"]))
            else:
                errors += 1
    ok_ends.sort()
    gap, gap_at = 0, 0
    for a, b in zip(ok_ends, ok_ends[1:]):
        if b - a > gap:
            gap, gap_at = b - a, a
    text = open(server_log).read()
    recovered = [line for line in text.splitlines()
                 if "reloaded" in line or "went through" in line or "writing batch" in line]
    wait_sync_standby()
    return {"killed": killed, "window_s": gap / 1e6, "window_starts_s": gap_at / 1e6, "errors": errors,
            "requests": total, "server_exit": code, "log": recovered[:4]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10, help="measured seconds per throughput case")
    ap.add_argument("--rounds", type=int, default=2, help="rounds over single/sync/async (default 2)")
    ap.add_argument("--failovers", type=int, default=3, help="failovers to time (default 3)")
    ap.add_argument("--kill-after", type=float, default=6, help="seconds of load before the kill")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--logs", default=os.path.join(ROOT, ".local", "ha-bench-logs"))
    ap.add_argument("--keep", action="store_true", help="leave both clusters running at the end")
    args = ap.parse_args()
    args.build_dir = os.path.abspath(args.build_dir)
    os.makedirs(args.logs, exist_ok=True)

    def cleanup():
        if args.keep:
            return
        subprocess.run([HA, "down", HA_DIR], stdout=subprocess.DEVNULL)
        local_pg("stop", SINGLE_DIR, check=False, show_errors=True)

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    failovers = []
    try:
        log("starting the single node and the HA cluster")
        single = local_pg("start", SINGLE_DIR, SINGLE_PORT)
        ha_up("on")
        mode = {"current": "on"}

        def url_for(config):
            if config == "single":
                return single
            want = "on" if config == "sync" else "off"
            if mode["current"] != want:
                log(f"switching the cluster to --sync {want}")
            url = ha_up(want)
            mode["current"] = want
            return url

        results = throughput(args, url_for)
        print_throughput(args, results)
        url = url_for("sync")
        for n in range(1, args.failovers + 1):
            log(f"failover {n}: {args.kill_after:g} s of load, then SIGKILL of the leader's postmaster")
            f = failover_once(args, url, n)
            failovers.append(f)
            log(f"failover {n}: killed {f['killed']}; {f['window_s']:.2f} s without a successful reply, "
                f"{f['errors']} of {f['requests']} requests refused; server exit {f['server_exit']}")
    finally:
        cleanup()

    if failovers:
        print("\n| failover | killed | longest time without a successful reply | requests refused | server exit |")
        print("|---|---|---|---|---|")
        for n, f in enumerate(failovers, 1):
            print(f"| {n} | {f['killed']} | {f['window_s']:.2f} s | {f['errors']} of {f['requests']} "
                  f"| {f['server_exit']} |")
        for n, f in enumerate(failovers, 1):
            for line in f["log"]:
                print(f"  failover {n} server log: {line}")


def print_throughput(args, results):
    print(f"\nHA benchmark, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores ({cpu_model()}), "
          f"{args.seconds:g} s per case, {args.rounds} rounds (median, [min-max])\n")
    print("| workload | PostgreSQL | orders/s | p99 ms | vs single |")
    print("|---|---|---|---|---|")
    for wname, _ in WORKLOADS:
        base = statistics.median(r[0] for r in results[("single", wname)])
        for config in ("single", "sync", "async"):
            rows = results[(config, wname)]
            tput = [r[0] for r in rows]
            p99 = [r[1] for r in rows]
            print(f"| {wname} | {config} | {statistics.median(tput):,.0f} [{min(tput):,.0f}-{max(tput):,.0f}] "
                  f"| {statistics.median(p99):.2f} [{min(p99):.2f}-{max(p99):.2f}] "
                  f"| {statistics.median(tput) / base:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
