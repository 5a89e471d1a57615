#!/usr/bin/env python3
"""Overload benchmark: do idle and slow connections hurt everyone else's latency?

    scripts/overload.py [--models pool,reactor,per-client,adaptive] [--duration 10]
                        [--idle 1000] [--slow 50] [--clients 16] [--db URL]

For each concurrency model it starts build/bin/exchange-server on a fresh database and measures
normal traffic (`exchange-client bench --clients 16`, one request per connection) twice:
  1. unloaded;
  2. while this script holds --idle connections open that send nothing (reopened if the
     server's read timeout closes them) and --slow clients that each send a valid request one
     byte every --slow-interval-ms, read the reply and start again.
It prints one row per model: p50 and p99 latency unloaded and loaded, the p99 factor, the
throughput both times, and the server's threads and resident memory under the load. A
benchmark, not a test: nothing is asserted, and the figures depend on the machine.

Without --db it starts a private PostgreSQL (scripts/local-pg.sh) in .local/overload-pg.
"""
import argparse
import json
import os
import resource
import selectors
import socket
import sys
import tempfile
import threading
import time

import harness
from harness import ROOT, Server, local_pg, proc_status

SERVER = os.path.join(ROOT, "build", "bin", "exchange-server")
CLIENT = os.path.join(ROOT, "build", "bin", "exchange-client")
PG_DIR = os.path.join(ROOT, ".local", "overload-pg")
PG_PORT = 25999

# What a slow client sends, a byte at a time: a valid request (the account need not exist).
SLOW_BODY = b'<transactions id="1"><query id="1"/></transactions>'
SLOW_REQUEST = str(len(SLOW_BODY)).encode() + b"\n" + SLOW_BODY


class Load:
    """Holds idle and slow connections open on one thread until stop()."""

    def __init__(self, port, idle, slow, interval_s):
        self.port, self.idle, self.slow, self.interval_s = port, idle, slow, interval_s
        self.sel = selectors.DefaultSelector()
        self.stopping = threading.Event()
        self.ready = threading.Event()
        self.reopened = 0       # idle connections the server closed (read timeout), reopened
        self.slow_replies = 0   # whole replies the slow clients received
        self.slow_refused = 0   # slow replies that were errors (e.g. the read timeout)
        self.connect_errors = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.thread.start()
        self.ready.wait()

    def stop(self):
        self.stopping.set()
        self.thread.join()

    def _connect(self):
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        except OSError:
            self.connect_errors += 1
            return None
        s.setblocking(False)
        return s

    def _open_idle(self):
        s = self._connect()
        if s:
            self.sel.register(s, selectors.EVENT_READ, {"kind": "idle"})

    def _open_slow(self):
        s = self._connect()
        if s:
            self.sel.register(s, selectors.EVENT_READ, {"kind": "slow", "sent": 0, "reply": b""})

    def _close(self, s):
        self.sel.unregister(s)
        s.close()

    def _run(self):
        for _ in range(self.idle):
            self._open_idle()
        for _ in range(self.slow):
            self._open_slow()
        self.ready.set()
        next_tick = time.monotonic()
        while not self.stopping.is_set():
            timeout = max(0.0, next_tick - time.monotonic())
            for key, _ in self.sel.select(timeout):
                s, state = key.fileobj, key.data
                try:
                    data = s.recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if data:
                    if state["kind"] == "slow":
                        state["reply"] += data
                    continue
                # The server closed it: count what happened, open a new one in its place.
                self._close(s)
                if state["kind"] == "idle":
                    self.reopened += 1
                    self._open_idle()
                else:
                    if state["reply"]:
                        self.slow_replies += 1
                        if b"<error>" in state["reply"]:
                            self.slow_refused += 1
                    self._open_slow()
            if time.monotonic() >= next_tick:
                next_tick += self.interval_s
                # Each slow client sends its next byte.
                for key in list(self.sel.get_map().values()):
                    state = key.data
                    if state["kind"] != "slow" or state["sent"] >= len(SLOW_REQUEST):
                        continue
                    try:
                        key.fileobj.send(SLOW_REQUEST[state["sent"]:state["sent"] + 1])
                        state["sent"] += 1
                    except OSError:
                        pass  # the server closed it; the read side notices
        for key in list(self.sel.get_map().values()):
            key.fileobj.close()
        self.sel.close()


def threads_rss(pid):
    """Threads and resident KiB of a process, from /proc (0, 0 once it is gone)."""
    status = proc_status(pid)
    return status.get("Threads", 0), status.get("VmRSS", 0)


def bench(port, args, seed):
    rep = harness.bench(CLIENT, port, "--clients", str(args.clients), "--duration", str(args.duration),
                        "--warmup", str(args.warmup), "--seed", str(seed))
    return {"p50": rep["latency_ms"]["p50"], "p99": rep["latency_ms"]["p99"],
            "rps": rep["throughput_rps"],
            "errors": rep["error_replies"] + rep["connection_errors"]}


def run_model(model, db, args, tmp):
    port = args.port
    server = Server(SERVER, db, port, log=os.path.join(tmp, f"{model}.log"))
    server.start("--concurrency", model, "--reset", "--log-level", "warn",
                 "--max-connections", str(args.max_connections))
    try:
        if not server.wait_listening(30, pause=0.1):
            if not server.alive():
                raise SystemExit(f"exchange-server exited with status {server.proc.returncode}")
            raise SystemExit("exchange-server did not start listening")
        unloaded = bench(port, args, 1)
        load = Load(port, args.idle, args.slow, args.slow_interval_ms / 1000.0)
        load.start()
        time.sleep(1.0)  # let the server accept them all (per-client starts a thread for each)
        threads, rss = threads_rss(server.pid)
        loaded = bench(port, args, 2)
        threads_after, rss_after = threads_rss(server.pid)
        load.stop()
        return {"model": model, "unloaded": unloaded, "loaded": loaded,
                "threads": max(threads, threads_after), "rss_mib": max(rss, rss_after) / 1024,
                "reopened": load.reopened, "slow_replies": load.slow_replies,
                "slow_refused": load.slow_refused, "connect_errors": load.connect_errors}
    finally:
        server.close(60)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="pool,reactor,per-client,adaptive",
                    help="comma-separated concurrency models (default pool,reactor,per-client,"
                         "adaptive)")
    ap.add_argument("--duration", type=int, default=10, help="measured seconds per run (default 10)")
    ap.add_argument("--warmup", type=int, default=1, help="unmeasured seconds first (default 1)")
    ap.add_argument("--clients", type=int, default=16, help="normal bench clients (default 16)")
    ap.add_argument("--idle", type=int, default=1000, help="idle connections (default 1000)")
    ap.add_argument("--slow", type=int, default=50, help="slow clients (default 50)")
    ap.add_argument("--slow-interval-ms", type=int, default=100,
                    help="a slow client sends one byte this often (default 100)")
    ap.add_argument("--max-connections", type=int, default=4096,
                    help="the server's --max-connections (default 4096)")
    ap.add_argument("--db", help="database URL (default: a private PostgreSQL in .local/overload-pg)")
    ap.add_argument("--port", type=int, default=24999)
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()

    # The held connections need descriptors beyond the usual soft limit of 1024.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = args.idle + args.slow + 256
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(want, soft)), hard))

    db = args.db
    if not db:
        db = local_pg("start", PG_DIR, PG_PORT)
    print(f"overload: {args.clients} bench clients for {args.duration} s, unloaded and then beside "
          f"{args.idle} idle connections and {args.slow} clients sending a byte every "
          f"{args.slow_interval_ms} ms", flush=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="overload-") as tmp:
        for model in [m for m in args.models.split(",") if m]:
            print(f"overload: model {model} ...", flush=True)
            results.append(run_model(model, db, args, tmp))

    head = (f"{'model':<11} {'unloaded p50':>12} {'p99':>8} {'loaded p50':>11} {'p99':>8} "
            f"{'p99 factor':>10} {'req/s unloaded':>14} {'loaded':>8} {'threads':>8} {'RSS MiB':>8}")
    print()
    print(head)
    print("-" * len(head))
    for r in results:
        u, l = r["unloaded"], r["loaded"]
        factor = l["p99"] / u["p99"] if u["p99"] > 0 else float("nan")
        print(f"{r['model']:<11} {u['p50']:>12.2f} {u['p99']:>8.2f} {l['p50']:>11.2f} "
              f"{l['p99']:>8.2f} {factor:>10.2f} {u['rps']:>14.0f} {l['rps']:>8.0f} "
              f"{r['threads']:>8} {r['rss_mib']:>8.1f}")
    print()
    print("latency in ms (bench: end - start of each request, nearest-rank percentiles); threads "
          "and RSS of the server under the load")
    for r in results:
        notes = []
        if r["unloaded"]["errors"] or r["loaded"]["errors"]:
            notes.append(f"bench errors {r['unloaded']['errors']} unloaded, "
                         f"{r['loaded']['errors']} loaded")
        if r["reopened"]:
            notes.append(f"{r['reopened']} idle connections closed by the server and reopened")
        if r["connect_errors"]:
            notes.append(f"{r['connect_errors']} load connections could not connect")
        notes.append(f"slow clients got {r['slow_replies']} replies "
                     f"({r['slow_refused']} of them errors)")
        print(f"  {r['model']}: " + "; ".join(notes))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
