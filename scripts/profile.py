#!/usr/bin/env python3
"""Where the time goes in one benchmark case: the per-order CPU budget, and perf profiles.

    scripts/profile.sh [--model reactor] [--seconds 8] [--db URL] [--pg-port 26000]
                       [--server PATH] [--floor] [--no-perf] [--setup-sql SQL] [--server-args ARGS] [--keep DIR] [--top 15]
                       [-- BENCH ARGS...]
    scripts/profile.sh -- --clients 64 --persistent          (the default case)

Starts exchange-server (or, with --floor, exchange-floor) on a fresh database, loads it with
`exchange-client bench` for --seconds after 1 s of warm-up, and over a window from the 2nd
second to 1 s before the end it measures:

  - CPU time per journaled request (one order per request in the default case) of each of the
    server's threads, by role: "requests" (the threads serving clients: framing, parsing,
    matching, rendering, replies), "exch-commit" (the group commit: the journal append and
    handing out the replies) and "exch-projector" (merging effects, writing the tables), from
    /proc/PID/task/TID/stat;
  - the same for PostgreSQL by backend: the group commit's (application_name exchange-commit),
    the projector's (exchange-projector), the rest of the database's client backends, and the
    cluster's own processes (WAL writer, checkpointer, autovacuum, ... and children it reaped),
    from /proc;
  - the load generator's CPU the same way;
  - with perf (unless --no-perf): cpu-clock samples with DWARF call graphs of the server, which
    split each server role into the functions it runs (inclusive time: parse, apply/match,
    render, journal submit; the journal statement; merging and writing the projection), and
    self-time profiles of the group commit's and the projector's PostgreSQL backends.

Requests counted: the journal's seq over the window (every one-order request is journaled).
Prints one table of µs per request and the top functions of each profile. perf's own sampling
costs a few per cent; --no-perf measures without it.
Needs build/bin (scripts/build.sh) and perf (apt-get install linux-perf); uses a private
PostgreSQL in .local/profile-pg (port 26000, --pg-port) unless --db URL is given, stopped at
the end if this run started it.
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from harness import (CLK_TCK, ROOT, Postgres, Reaper, Server, bench_command, free_port, load1,
                     start_local_pg)

REAPER = Reaper("profile")

# Inclusive-time categories of the server's threads: (role, label, regex on a frame's symbol).
# A sample counts for the first category one of its frames matches, innermost frame first for
# nothing: the order below decides (journal submit before apply, which does not call it).
CATEGORIES = {
    "requests": [
        ("parse (protocol::parse)", r"^protocol::parse\("),
        ("apply and match (app::apply)", r"^app::apply\("),
        ("render (protocol::render)", r"^protocol::render(\[abi:cxx11\])?\("),
        ("journal submit (Batcher::submit)", r"^store::Batcher::submit\("),
    ],
    "exch-commit": [
        ("journal statement (Database::write_journal)", r"^store::Database::write_journal\("),
        ("hand-over to the projector", r"^store::Projector::enqueue\("),
    ],
    "exch-projector": [
        ("merge effects (ProjectionRows::merge)", r"^store::(Batch|ProjectionRows)::(merge|fold)"),
        ("projection statement (Database::project)", r"^store::Database::project\("),
        ("journal trim", r"^store::Database::trim_journal\("),
    ],
}


def stat(path):
    """(comm, utime+stime ticks, ppid) of /proc/.../stat, or None if gone."""
    try:
        with open(path) as f:
            raw = f.read()
    except OSError:
        return None
    comm = raw[raw.index("(") + 1:raw.rindex(")")]
    rest = raw[raw.rindex(")") + 2:].split()
    return comm, int(rest[11]) + int(rest[12]), int(rest[1]), int(rest[13]) + int(rest[14])


def thread_ticks(pid):
    """Ticks per thread role of a process: {role: ticks}; roles are thread names, and every
    thread still named after the program counts as "requests"."""
    out = collections.Counter()
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        s = stat(f"/proc/{pid}/task/{tid}/stat")
        if s:
            out[role_of(s[0])] += s[1]
    return out


def role_of(comm):
    return comm if comm.startswith("exch-") else "requests"


class PgCpu:
    """CPU ticks of a local cluster, by role: its backends on `dbname` by application_name, the
    cluster's other processes, and the children the postmaster reaped."""

    def __init__(self, pg, dbname):
        self.pg, self.dbname = pg, dbname

    def snapshot(self):
        roles = {}
        for line in self.pg.query(
                "SELECT pid, application_name FROM pg_stat_activity "
                f"WHERE datname = '{self.dbname}' AND pid <> pg_backend_pid()").splitlines():
            pid, _, name = line.partition("|")
            roles[int(pid)] = {"exchange-commit": "journal (group commit)",
                               "exchange-projector": "projection"}.get(name, "other client backends")
        out = collections.Counter()
        pm = self.pg.postmaster_pid
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            pid = int(d)
            s = stat(f"/proc/{pid}/stat")
            if s is None:
                continue
            if pid == pm:
                out["cluster (WAL writer, checkpointer, autovacuum, ...)"] += s[1] + s[3]
            elif s[2] == pm:
                out[roles.get(pid, "cluster (WAL writer, checkpointer, autovacuum, ...)")] += s[1]
        return out, roles


def journal_seq(pg, dbname):
    return int(pg.query("SELECT coalesce(max(seq), 0) FROM journal", db=dbname) or 0)


def perf_samples(path):
    """(comm, [symbols innermost first]) per sample of a perf.data with call graphs."""
    p = subprocess.run(["perf", "script", "-i", path, "-F", "comm,ip,sym", "--no-demangle"],
                       capture_output=True, text=True)
    # Demangle separately: perf's own demangling of every frame is slow on long C++ names.
    text = p.stdout
    if shutil.which("c++filt"):
        text = subprocess.run(["c++filt"], input=text, capture_output=True, text=True).stdout
    comm, frames = None, []
    for line in text.splitlines():
        if not line.strip():
            if comm is not None:
                yield comm, frames
            comm, frames = None, []
        elif not line.startswith((" ", "\t")):
            comm = line.strip()
            frames = []
        else:
            parts = line.strip().split(None, 1)
            frames.append(parts[1] if len(parts) > 1 else "?")
    if comm is not None:
        yield comm, frames


def top_self(path, n):
    """perf report's self-time lines, trimmed."""
    p = subprocess.run(["perf", "report", "-i", path, "--stdio", "--no-children", "--sort", "symbol",
                        "-g", "none"], capture_output=True, text=True)
    lines = [re.sub(r"\s+$", "", line)[:110] for line in p.stdout.splitlines()
             if re.match(r"^ +[0-9]+\.[0-9]+%", line)]
    return lines[:n]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="reactor")
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--db", help="database URL (default: private PostgreSQL in .local/profile-pg)")
    ap.add_argument("--pg-port", type=int, default=26000)
    ap.add_argument("--server", help="server binary (default build/bin/exchange-server)")
    ap.add_argument("--floor", action="store_true", help="profile exchange-floor instead of the server")
    ap.add_argument("--no-perf", action="store_true", help="CPU accounting only, no perf")
    ap.add_argument("--setup-sql", help="SQL run on the database once the server is up (experiments: "
                    "drop an index, change a table's settings)")
    ap.add_argument("--server-args", default="",
                    help="more exchange-server flags, as one string (e.g. \"--projection-gather-ms 200\")")
    ap.add_argument("--keep", help="keep the perf data, logs and bench output in this directory")
    ap.add_argument("--top", type=int, default=15, help="functions shown per profile")
    ap.add_argument("bench", nargs="*", help="after --: exchange-client bench arguments")
    args = ap.parse_args()
    bench_args = args.bench or ["--clients", "64", "--persistent"]
    if not args.no_perf and not shutil.which("perf"):
        ap.error("perf is missing (apt-get install linux-perf), or pass --no-perf")
    if args.seconds < 4:
        ap.error("--seconds must be at least 4 (the window leaves out the first 2 s and the last)")
    with REAPER:
        return run(args, bench_args)


def run(args, bench_args):
    bindir = os.path.join(ROOT, "build", "bin")
    if args.db:
        db = args.db
    else:
        db, _ = start_local_pg(os.path.join(ROOT, ".local", "profile-pg"), args.pg_port, REAPER)
    pg = Postgres(db)
    dbname = pg.dbname
    if args.floor:
        dbname = "exchange_floor"
        db = pg.ensure_database(dbname)
    binary = args.server or os.path.join(bindir, "exchange-floor" if args.floor else "exchange-server")
    out = args.keep or tempfile.mkdtemp(prefix="profile-")
    os.makedirs(out, exist_ok=True)
    server = Server(binary, db, free_port(), log=os.path.join(out, "server.log"))
    REAPER.process(server.start("--concurrency", args.model, "--reset", "--log-level", "info",
                                *args.server_args.split()), os.path.basename(binary))
    if not server.wait_listening(10, pause=0.05):
        if not server.alive():
            raise SystemExit(f"profile: {binary} exited with status {server.proc.returncode}")
        raise SystemExit(f"profile: {binary} did not start listening")
    if args.setup_sql:
        pg.query(args.setup_sql, db=dbname)
    bench_out = open(os.path.join(out, "bench.txt"), "w")
    bench = subprocess.Popen(bench_command(os.path.join(bindir, "exchange-client"), server.port, "--duration",
                                           f"{args.seconds:g}", "--warmup", "1", *bench_args), stdout=bench_out)
    time.sleep(2)
    window = args.seconds - 2  # from the 2nd second (1 s past warm-up) to 1 s before the end
    pgcpu = PgCpu(pg, dbname)
    load_before = load1()
    seq0, srv0, pg0, cli0, t0 = (journal_seq(pg, dbname), thread_ticks(server.pid), pgcpu.snapshot(),
                                 stat(f"/proc/{bench.pid}/stat")[1], time.monotonic())
    backends = pg0[1]
    perfs = []
    if not args.no_perf:
        perfs.append(subprocess.Popen(
            ["perf", "record", "-q", "-e", "cpu-clock", "-F", "499", "--call-graph", "dwarf,16384",
             "-o", os.path.join(out, "server.perf"), "-p", str(server.pid), "--", "sleep", f"{window:g}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for pid, role in backends.items():
            if role in ("journal (group commit)", "projection"):
                name = "pg-commit" if role.startswith("journal") else "pg-projector"
                perfs.append(subprocess.Popen(
                    ["perf", "record", "-q", "-e", "cpu-clock", "-F", "999", "-o",
                     os.path.join(out, f"{name}.perf"), "-p", str(pid), "--", "sleep", f"{window:g}"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    time.sleep(window)
    seq1, srv1, pg1, cli1, t1 = (journal_seq(pg, dbname), thread_ticks(server.pid), pgcpu.snapshot(),
                                 stat(f"/proc/{bench.pid}/stat")[1], time.monotonic())
    load_after = load1()
    for p in perfs:
        p.wait()
    bench.wait()
    REAPER.stop(server.proc)
    server.close()
    bench_out.close()

    n = max(seq1 - seq0, 1)
    wall = t1 - t0
    us = lambda ticks: ticks / CLK_TCK / n * 1e6  # noqa: E731
    what = "exchange-floor" if args.floor else "exchange-server"
    print(f"== {what} --concurrency {args.model}; bench {' '.join(bench_args)}; "
          f"window {wall:.1f} s, {n:,} journaled requests ({n / wall:,.0f}/s); "
          f"load average {load_before} before, {load_after} after; perf {'off' if args.no_perf else 'on'}")
    with open(os.path.join(out, "bench.txt")) as f:
        for line in f:
            if re.search(r"throughput|latency ms", line):
                print("   bench: " + line.strip())

    # The server's roles, split into functions by the perf samples of each role.
    split = {}
    if not args.no_perf and os.path.exists(os.path.join(out, "server.perf")):
        counts = collections.defaultdict(collections.Counter)
        compiled = {role: [(label, re.compile(rx)) for label, rx in cats] for role, cats in CATEGORIES.items()}
        for comm, frames in perf_samples(os.path.join(out, "server.perf")):
            role = role_of(comm)
            counts[role]["_all"] += 1
            for label, rx in compiled.get(role, []):
                if any(rx.search(f) for f in frames):
                    counts[role][label] += 1
                    break
        split = counts

    total_srv = 0.0
    print(f"\n{'CPU per journaled request':<60} {'µs':>7}  {'share of a core':>15}")
    rows = []
    for role in sorted(set(srv1) | set(srv0)):
        ticks = srv1[role] - srv0[role]
        total_srv += us(ticks)
        rows.append((f"server: {role}", us(ticks), ticks / CLK_TCK / wall))
        c = split.get(role)
        if c and c["_all"]:
            rest = 1.0
            for label, _ in CATEGORIES.get(role, []):
                share = c[label] / c["_all"]
                rest -= share
                rows.append((f"    {label}", us(ticks) * share, None))
            if CATEGORIES.get(role):
                rows.append(("    the rest (event loop, syscalls, locks, replies, waits)"
                             if role == "requests" else "    the rest (waits, wake-ups, libpq)",
                             us(ticks) * rest, None))
    rows.append(("server, all threads", total_srv, None))
    total_pg = 0.0
    for role in sorted(set(pg1[0]) | set(pg0[0])):
        ticks = pg1[0][role] - pg0[0][role]
        total_pg += us(ticks)
        rows.append((f"PostgreSQL: {role}", us(ticks), ticks / CLK_TCK / wall))
    rows.append(("PostgreSQL, all", total_pg, None))
    rows.append(("load generator (exchange-client bench)", us(cli1 - cli0), (cli1 - cli0) / CLK_TCK / wall))
    rows.append(("all", total_srv + total_pg + us(cli1 - cli0), None))
    for label, value, core in rows:
        print(f"{label:<60} {value:7.1f}  {'' if core is None else f'{core * 100:14.0f}%'}")

    if not args.no_perf:
        for name, title in (("server.perf", f"{what}: top functions (self time, all threads)"),
                            ("pg-commit.perf", "PostgreSQL, the group commit's backend: top functions"),
                            ("pg-projector.perf", "PostgreSQL, the projector's backend: top functions")):
            path = os.path.join(out, name)
            if os.path.exists(path):
                print(f"\n== {title}")
                for line in top_self(path, args.top):
                    print(line)
    print("\n== the server's own counters at exit")
    with open(os.path.join(out, "server.log")) as f:
        for line in f:
            if "stopped after" in line:
                print(line.rstrip())
    if args.keep:
        print(f"\nperf data, logs and bench output kept in {out}")
    else:
        shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
