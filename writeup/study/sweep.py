"""The sweep runner: every experiment's runs, one CSV row per run (runs.csv).

    python -m study.sweep --db URL [--quick] [--out DIR] [--only a,b] [--reps N] [--resume|--replace]

Each run starts its server(s) with --reset on a database of their own (created if missing),
pinned with taskset where the cell says so, runs the bench client against them, stops them
with SIGTERM and appends one row to OUT/runs.csv: the cell, the git commit, the machine (nproc,
CPU model, kernel, memory), the bench's summary and what the run cost in CPU seconds (server,
PostgreSQL, client) and PostgreSQL commits. Per-request CSVs (where an experiment needs the
distribution or the time series) and --metrics files go to OUT/raw/EXPERIMENT/.

The durable floor (exchange-floor, --floor-bin) runs in the scaling experiment's cells like a
server (system "floor", database PREFIX_floor of its own); if the binary is missing those runs
are skipped with a warning in manifest.json.

Subsets: --only a,b --resume appends to runs.csv and skips runs that already have an ok row;
--only a,b --replace sets the named experiments' rows (and raw/EXPERIMENT/) aside to
LOGS/../old-results/ and runs them again, keeping every other experiment's rows.
"""
from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import re
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from . import credentials
from . import experiments as ex
from . import idle, machine, procs, stats

REPO = Path(__file__).resolve().parents[2]

COLUMNS = [
    # what and where
    "experiment", "cell", "rep", "status", "note", "started_at", "git_commit",
    "nproc", "cpu_model", "kernel", "mem_gib", "pg_version",
    # how busy the shared machine was: 1-minute load average before the run (our own processes
    # not yet started) and the CPU pressure (PSI "some", 10 s average) at its end
    "host_load1", "host_cpu_some10",
    # the cell
    "system", "model", "threads", "server_args", "cores", "cpu_list", "replicas", "clients", "mode", "rate",
    "workload", "orders_per_request", "persistent", "client_threads", "sim_io_ms", "duration_s",
    "warmup_s", "requests_target",
    # the security experiment's legs (empty elsewhere): plaintext | tls, --tls-resume on | off,
    # the newest TLS version offered (--tls-max-version)
    "transport", "resumption", "tls_version",
    # the bench's summary (measured requests; latency in ms)
    "requests", "ok", "rejected", "error_replies", "conn_errors", "dropped", "completion_s",
    "throughput_rps", "throughput_items_ps", "lat_mean_ms", "lat_sd_ms", "lat_p50_ms",
    "lat_p90_ms", "lat_p95_ms", "lat_p99_ms", "lat_p999_ms", "lat_max_ms", "jit_2sd", "jit_3sd",
    "jit_4sd", "first_mean_ms", "first_sd_ms", "first_p50_ms", "first_p99_ms", "first_jit_2sd",
    "first_jit_3sd", "first_jit_4sd", "disagreements", "tls_handshakes", "tls_resumed",
    # what it cost (the whole run: setup, warm-up and measurement)
    "total_requests", "wall_s", "server_cpu_s", "pg_cpu_s", "client_cpu_s", "pg_commits",
    "server_threads_max", "server_rss_kb_max", "server_vsz_kb_max", "server_sockets_max",
    "srv_requests", "srv_commits", "srv_commit_ms",
    # files
    "bench_json", "requests_csv", "metrics_csv",
]


def log(msg: str) -> None:
    print(msg, flush=True)


def fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


class Runner:
    def __init__(self, args):
        self.args = args
        self.out = Path(args.out).resolve()
        self.raw = self.out / "raw"
        self.logs = Path(args.logs).resolve() if args.logs else self.out / "logs"
        self.csv_path = self.out / "runs.csv"
        self.server_bin = args.server_bin
        self.client_bin = args.client_bin
        self.floor_bin = args.floor_bin
        self.pg = procs.Postgres(args.db)
        self.machine = machine.describe()
        self.commit = machine.git_commit(REPO)
        self.pg_version = self.pg.version()
        self.server_caps = procs.server_caps(self.server_bin)
        self.client_caps = procs.client_caps(self.client_bin)
        self.floor_caps = None
        if self.floor_bin and os.access(self.floor_bin, os.X_OK):
            try:
                self.floor_caps = procs.server_caps(self.floor_bin)
            except RuntimeError as e:
                procs.warn(f"exchange-floor unusable: {e}")
        self.db_urls: dict[str, str] = {}
        self.prefix = args.db_prefix
        self.creds_dir: str | None = None  # the security runs' certificates and key
        self.creds: dict[str, str] | None = None

    def security_flags(self, leg: ex.Leg) -> tuple[list[str], list[str]]:
        """(server flags, bench flags) of a security leg; the certificates, principals and key
        are made on first use in a temporary directory that cleanup() removes."""
        if self.creds is None:
            self.creds_dir = self.creds_dir or tempfile.mkdtemp(prefix="writeup-tls-")
            self.creds = credentials.make_credentials(self.creds_dir)
        tls = None if leg.tls_flags is None else list(leg.tls_flags)
        return credentials.security_flags(self.creds, tls)

    def cleanup(self) -> None:
        if self.creds_dir:
            shutil.rmtree(self.creds_dir, ignore_errors=True)
            self.creds_dir = self.creds = None

    # ---- bookkeeping --------------------------------------------------------------------

    def db_url(self, name: str) -> str:
        name = self.prefix + name.removeprefix("writeup")
        if name not in self.db_urls:
            self.db_urls[name] = self.pg.ensure_database(name)
        return self.db_urls[name]

    def done_keys(self) -> set[tuple[str, str, str]]:
        if not self.csv_path.exists():
            return set()
        with open(self.csv_path, newline="") as f:
            return {(r["experiment"], r["cell"], r["rep"]) for r in csv.DictReader(f)
                    if r.get("status") == "ok"}

    def append(self, row: dict) -> None:
        new = not self.csv_path.exists() or self.csv_path.stat().st_size == 0
        if not new:
            with open(self.csv_path, newline="") as f:
                header = next(csv.reader(f), [])
            if header != COLUMNS:
                # An older layout (a column was added since): rewrite the old rows in the new
                # layout (missing fields empty) and keep the original under old-results/.
                backup = self.logs.parent / "old-results" / f"runs.{int(time.time())}.csv"
                backup.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(str(self.csv_path), str(backup))
                with open(self.csv_path, newline="") as f:
                    old_rows = list(csv.DictReader(f))
                with open(self.csv_path, "w", newline="") as f:
                    w = csv.writer(f)
                    w.writerow(COLUMNS)
                    for r in old_rows:
                        w.writerow([r.get(c, "") or "" for c in COLUMNS])
                procs.warn(f"runs.csv rewritten in the current column layout (original: {backup})")
        with open(self.csv_path, "a", newline="") as f:
            w = csv.writer(f)
            if new:
                w.writerow(COLUMNS)
            w.writerow([fmt(row.get(c)) for c in COLUMNS])

    # ---- one run ------------------------------------------------------------------------

    def execute(self, run: ex.RunSpec) -> dict | None:
        base = self.raw / run.experiment
        base.mkdir(parents=True, exist_ok=True)
        stem = f"{run.cell}_r{run.rep}"
        row = {
            "experiment": run.experiment, "cell": run.cell, "rep": run.rep, "status": "ok",
            "note": run.params.get("note", ""),
            "started_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "git_commit": self.commit, **self.machine, "pg_version": self.pg_version,
            "replicas": len(run.servers), "system": run.servers[0].binary,
            "server_args": " ".join(run.servers[0].args),
            "cpu_list": run.servers[0].cpu_list or "",
        }
        row.update({k: v for k, v in run.params.items() if k != "note"})
        row["host_load1"] = procs.load1()
        servers: list[procs.Server] = []
        metrics_path = base / f"{stem}_metrics.csv" if run.metrics and self.server_caps.has("metrics") else None
        secure_srv, secure_bench = [], []
        try:
            if run.security:
                secure_srv, secure_bench = self.security_flags(run.security)
            for i, spec in enumerate(run.servers):
                binary = self.floor_bin if spec.binary == "floor" else self.server_bin
                servers.append(procs.Server(
                    binary, self.db_url(spec.db), spec.model, spec.args + secure_srv, spec.cpu_list,
                    self.logs / run.experiment / f"{stem}_server{i + 1}.log",
                    metrics_path if i == 0 else None))
        except procs.ModelUnknown as e:
            for s in servers:
                s.stop()
            what = "the durable floor" if run.servers[0].binary == "floor" else "the server"
            return {"skip": f"{run.experiment}: model '{run.servers[0].model}' unknown to {what} ({e})"}
        except (procs.ServerFailed, OSError, RuntimeError) as e:
            # OSError: the binary vanished (a rebuild); RuntimeError: openssl failed
            for s in servers:
                s.stop()
            row.update(status="failed", note=f"server: {e}"[:300])
            return row

        dbs = [self.prefix + s.db.removeprefix("writeup") for s in run.servers]
        targets = (["--port", str(servers[0].port)] if len(servers) == 1 else
                   ["--replicas", ",".join(s.address for s in servers)])
        results: list[procs.BenchResult] = []
        csv_paths: list[Path] = []
        starts: list[float] = []
        try:
            commits0 = self.pg.commits(dbs)
            pg_cpu0 = self.pg.cpu_seconds()
            srv_cpu0 = [s.cpu_seconds() or 0.0 for s in servers]
            t0 = time.monotonic()
            benches = []
            for st in run.streams:
                name = stem if len(run.streams) == 1 else f"{stem}_{st.name}"
                extra = []
                if run.keep_csv:
                    csv_paths.append(base / f"{name}.csv")
                    extra += ["--csv", str(csv_paths[-1])]
                extra += ["--label", f"{run.experiment}/{run.cell}/rep{run.rep}"]
                benches.append(procs.Bench(self.client_bin, st.args + secure_bench + targets + extra,
                                           base / f"{name}.json",
                                           self.logs / run.experiment / f"{name}.log"))
            launch = time.monotonic()
            for b, st in sorted(zip(benches, run.streams), key=lambda x: x[1].delay_s):
                time.sleep(max(0.0, launch + st.delay_s - time.monotonic()))
                b.start()
            starts = [b.start_unix for b in benches]
            if benches:
                results = self._wait(benches, servers, run.timeout_s)
            else:
                self._hold_idle(run, servers, row)
            wall = time.monotonic() - t0
            row["host_cpu_some10"] = procs.cpu_pressure10()
            for s in servers:
                s.sample()
            srv_cpu1 = [s.cpu_seconds() or 0.0 for s in servers]
        except RuntimeError as e:
            row.update(status="failed", note=str(e)[:300])
            for s in servers:
                s.stop()
            return row
        rcs = [s.stop() for s in servers]
        # The server's own account of its group commits, from its last log line (server 1):
        # "stopped after N [journaled ]requests in M commits (mean X requests and Y ms per commit)".
        try:
            m = re.search(r"stopped after (\d+) (?:journaled )?requests in (\d+) commits \(mean "
                          r"[\d.e+-]+ requests and ([\d.e+-]+) ms per commit\)",
                          servers[0].log_path.read_text(errors="replace"))
            if m:
                row.update(srv_requests=int(m.group(1)), srv_commits=int(m.group(2)),
                           srv_commit_ms=float(m.group(3)))
        except OSError:
            pass
        commits1 = self.pg.commits(dbs)
        pg_cpu1 = self.pg.cpu_seconds()

        row["wall_s"] = round(wall, 3)
        row["server_cpu_s"] = round(sum(srv_cpu1) - sum(srv_cpu0), 3)
        if pg_cpu0 is not None and pg_cpu1 is not None:
            row["pg_cpu_s"] = round(pg_cpu1 - pg_cpu0, 3)
        if commits0 is not None and commits1 is not None:
            row["pg_commits"] = commits1 - commits0
        row["client_cpu_s"] = round(sum(r.cpu_s for r in results), 3)
        row["server_threads_max"] = max(s.max_threads for s in servers)
        row["server_rss_kb_max"] = max(s.max_rss_kb for s in servers)
        row["server_vsz_kb_max"] = max(s.max_vsz_kb for s in servers)
        row["server_sockets_max"] = max(s.max_sockets for s in servers)
        # When each stream's measurement began (Unix s): launch + its setup. The per-request
        # CSVs count from there; the --metrics rows carry Unix seconds.
        starts = [t + float((r.json or {}).get("setup", {}).get("seconds", 0.0))
                  for t, r in zip(starts, results)]
        if metrics_path is not None and metrics_path.exists():
            row["metrics_csv"] = str(metrics_path.relative_to(self.out))
        if len(run.streams) > 1 or metrics_path is not None:
            (base / f"{stem}_starts.json").write_text(json.dumps(
                {st.name: t for st, t in zip(run.streams, starts)}))
        bad = [i + 1 for i, rc in enumerate(rcs) if rc not in (0, None)]
        notes = []
        if bad:
            notes.append(f"server(s) {bad} exited non-zero")
        if results:
            self._summarize(row, run, results, csv_paths, starts, notes)
        if notes:
            row["note"] = "; ".join(filter(None, [row.get("note", "")] + notes))[:300]
        for p in csv_paths:  # keep the per-request rows, compressed
            if p.exists():
                with open(p, "rb") as src, gzip.open(str(p) + ".gz", "wb") as dst:
                    shutil.copyfileobj(src, dst)
                p.unlink()
        if csv_paths:
            row["requests_csv"] = ";".join(str(Path(str(p) + ".gz").relative_to(self.out)) for p in csv_paths)
        return row

    def _wait(self, benches, servers, timeout) -> list[procs.BenchResult]:
        deadline = time.monotonic() + timeout
        results: list[procs.BenchResult | None] = [None] * len(benches)
        while any(r is None for r in results):
            for i, b in enumerate(benches):
                if results[i] is None:
                    results[i] = b.try_reap()
            for s in servers:
                s.sample()
            if time.monotonic() > deadline:
                for i, b in enumerate(benches):
                    if results[i] is None:
                        results[i] = b.interrupt()
            time.sleep(0.05)
        return results

    @staticmethod
    def _hold_idle(run, servers, row) -> None:
        """No bench: open run.idle_connections idle sessions, watch the server run.hold_s."""
        sessions = None
        try:
            if run.idle_connections:
                sessions = idle.IdleSessions(servers[0].port, run.idle_connections)
            end = time.monotonic() + max(run.hold_s, 1.0)
            while time.monotonic() < end:
                for s in servers:
                    s.sample()
                time.sleep(0.1)
        except (OSError, ConnectionError) as e:
            held = len(sessions.sockets) if sessions else 0
            raise RuntimeError(f"idle sessions: {e} (after {held})") from e
        finally:
            if sessions:
                sessions.close()

    def _summarize(self, row, run, results, csv_paths, starts, notes) -> None:
        failed = [r for r in results if r.rc != 0 or r.json is None]
        if failed:
            row["status"] = "failed"
            notes.append("bench: " + " | ".join(f"exit {r.rc}: {r.stderr_tail.strip().splitlines()[-1] if r.stderr_tail.strip() else ''}" for r in failed))
        jsons = [r.json for r in results if r.json]
        if not jsons:
            return
        row["bench_json"] = ";".join(
            str(Path(r.cmd[r.cmd.index("--json") + 1]).relative_to(self.out)) for r in results)
        reps = [j["repetitions"][0] for j in jsons if j.get("repetitions")]
        if not reps:
            return
        for key, col in [("requests", "requests"), ("ok", "ok"), ("rejected", "rejected"),
                         ("error_replies", "error_replies"), ("connection_errors", "conn_errors"),
                         ("dropped", "dropped")]:
            row[col] = sum(int(r.get(key, 0)) for r in reps)
        row["total_requests"] = sum(int(j.get("setup", {}).get("requests", 0)) for j in jsons) + \
            sum(int(r.get("requests", 0)) + int(r.get("warmup_requests", 0)) for r in reps)
        row["disagreements"] = sum(int(r.get("disagreements", 0)) for r in reps) if len(run.servers) > 1 else ""
        if run.security and run.security.tls_flags is not None:  # the bench's counts, warm-up included
            row["tls_handshakes"] = sum(int(r.get("tls_handshakes", 0)) for r in reps)
            row["tls_resumed"] = sum(int(r.get("tls_resumed", 0)) for r in reps)
        if len(reps) == 1:
            r = reps[0]
            row["completion_s"] = r["completion_s"]
            row["throughput_rps"] = r["throughput_rps"]
            row["throughput_items_ps"] = r["throughput_items_ps"]
            self._latency(row, "lat", r["latency_ms"])
            if "first_reply_latency_ms" in r:
                self._latency(row, "first", r["first_reply_latency_ms"])
        else:
            self._merge_streams(row, csv_paths, starts)
        if row.get("ok", 0) + row.get("rejected", 0) == 0:
            row["status"] = "failed"
            notes.append("nothing served")
        errors = row.get("error_replies", 0) + row.get("conn_errors", 0)
        if errors:
            notes.append(f"{errors} errors")
            examples = [e for r in reps for e in r.get("error_examples", [])][:2]
            if examples:
                notes.append("e.g. " + " / ".join(examples))

    @staticmethod
    def _latency(row, prefix, s) -> None:
        j = s.get("jitter", {})
        row[f"{prefix}_mean_ms"] = s.get("mean")
        row[f"{prefix}_sd_ms"] = s.get("stddev")
        row[f"{prefix}_p50_ms"] = s.get("p50")
        row[f"{prefix}_p99_ms"] = s.get("p99")
        row[f"{prefix}_jit_2sd"] = j.get("beyond_mean_plus_2sd")
        row[f"{prefix}_jit_3sd"] = j.get("beyond_mean_plus_3sd")
        row[f"{prefix}_jit_4sd"] = j.get("beyond_mean_plus_4sd")
        if prefix == "lat":
            row["lat_p90_ms"] = s.get("p90")
            row["lat_p95_ms"] = s.get("p95")
            row["lat_p999_ms"] = s.get("p99_9")
            row["lat_max_ms"] = s.get("max")

    @staticmethod
    def _merge_streams(row, csv_paths, starts) -> None:
        """Several concurrent streams (seed 001's classes): one summary over all their requests."""
        lat, begin, end, items = [], float("inf"), float("-inf"), 0
        for path, t0 in zip(csv_paths, starts):
            if not path.exists():
                continue
            with open(path, newline="") as f:
                for r in csv.DictReader(f):
                    if r["warmup"] == "1" or r["rep"] != "1":
                        continue
                    begin = min(begin, t0 + float(r["intended_us"]) / 1e6)
                    if r["status"] in ("ok", "rejected"):
                        lat.append(float(r["latency_us"]) / 1000.0)
                        items += int(r["items"])
                        end = max(end, t0 + float(r["end_us"]) / 1e6)
        if not lat or end <= begin:
            return
        row["completion_s"] = end - begin
        row["throughput_rps"] = len(lat) / (end - begin)
        row["throughput_items_ps"] = items / (end - begin)
        j = stats.jitter(lat)
        p50, p90, p95, p99, p999 = stats.percentiles(lat, [50, 90, 95, 99, 99.9])
        row.update(lat_mean_ms=j.mean, lat_sd_ms=j.stddev, lat_p50_ms=p50, lat_p90_ms=p90,
                   lat_p95_ms=p95, lat_p99_ms=p99, lat_p999_ms=p999, lat_max_ms=max(lat),
                   jit_2sd=j.beyond_2sd, jit_3sd=j.beyond_3sd, jit_4sd=j.beyond_4sd)

    # ---- the whole sweep ----------------------------------------------------------------

    def _set_aside_old_results(self) -> None:
        """A fresh sweep starts from an empty results directory; what was there moves to
        LOGS/../old-results/TIMESTAMP/ (never into the tracked results)."""
        old = [p for p in (self.csv_path, self.out / "manifest.json", self.raw) if p.exists()]
        if not old:
            return
        dest = self.logs.parent / "old-results" / time.strftime("%Y%m%d-%H%M%S")
        dest.mkdir(parents=True, exist_ok=True)
        for p in old:
            shutil.move(str(p), str(dest / p.name))
        log(f"sweep: earlier results moved to {dest}")

    def _set_aside_experiments(self, names: list[str]) -> None:
        """--replace: the named experiments' rows leave runs.csv (the whole file is copied to
        LOGS/../old-results/TIMESTAMP/ first, with their raw/ directories); the other rows stay."""
        dest = self.logs.parent / "old-results" / time.strftime("%Y%m%d-%H%M%S")
        moved = 0
        if self.csv_path.exists():
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy(str(self.csv_path), str(dest / "runs.csv"))
            with open(self.csv_path, newline="") as f:
                reader = csv.DictReader(f)
                header = reader.fieldnames or COLUMNS
                rows = list(reader)
            keep = [r for r in rows if r.get("experiment") not in names]
            moved = len(rows) - len(keep)
            with open(self.csv_path, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=header)
                w.writeheader()
                w.writerows(keep)
        for name in names:
            raw = self.raw / name
            if raw.exists():
                (dest / "raw").mkdir(parents=True, exist_ok=True)
                shutil.move(str(raw), str(dest / "raw" / name))
        log(f"sweep: {moved} row(s) of {', '.join(names)} set aside in {dest}; other rows kept")

    def run(self) -> int:
        config = ex.QUICK if self.args.quick else ex.FULL
        only = [s for s in self.args.only.split(",") if s] if self.args.only else None
        if only:
            unknown = [o for o in only if o not in ex.EXPERIMENTS]
            if unknown:
                log(f"unknown experiment(s) {unknown}; known: {', '.join(ex.EXPERIMENTS)}")
                return 2
        ctx = ex.Context(models=self.server_caps.models, nproc=self.machine["nproc"],
                         floor_models=self.floor_caps.models if self.floor_caps else None,
                         floor_missing=f"{self.floor_bin or 'exchange-floor'} is not an executable")
        runs = ex.plan(config, ctx, only, self.args.reps)
        todo = []
        for r in runs:
            missing = [f for f in r.needs_flags if not self.server_caps.has(f)]
            missing_c = [f for f in r.needs_client_flags if not self.client_caps.has(f)]
            if missing or missing_c:
                ctx.skip(f"{r.experiment}: server lacks {['--' + f for f in missing]}"
                         if missing else f"{r.experiment}: bench lacks {['--' + f for f in missing_c]}")
                continue
            todo.append(r)
        if self.args.replace and not self.args.dry_run:
            self._set_aside_experiments(only)
        keep = self.args.resume or self.args.replace
        done = self.done_keys() if keep else set()
        if not keep and not self.args.dry_run:
            self._set_aside_old_results()
        log(f"sweep: {len(todo)} runs ({'quick' if self.args.quick else 'full'}), out {self.out}")
        log(f"machine: {self.machine}; commit {self.commit}; PostgreSQL {self.pg_version}")
        log(f"server models: {', '.join(self.server_caps.models)}; durable floor: "
            + (f"{self.floor_bin} ({', '.join(self.floor_caps.models)})" if self.floor_caps else "absent"))
        for s in ctx.skipped:
            procs.warn("skipped " + s)
        if self.args.dry_run:
            for r in todo:
                log(f"  {r.experiment:16} {r.cell:28} rep {r.rep}")
            return 0
        self.out.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        failures = 0
        spent: dict[str, float] = {}
        for i, r in enumerate(todo, 1):
            if (r.experiment, r.cell, str(r.rep)) in done:
                continue
            t = time.monotonic()
            row = self.execute(r)
            spent[r.experiment] = spent.get(r.experiment, 0.0) + time.monotonic() - t
            if row is None:
                continue
            if "skip" in row:
                ctx.skip(row["skip"])
                procs.warn("skipped " + row["skip"])
                continue
            self.append(row)
            failures += row["status"] != "ok"
            thr = row.get("throughput_rps")
            p99 = row.get("lat_p99_ms")
            log(f"[{i}/{len(todo)}] {r.experiment} {r.cell} rep {r.rep}: {row['status']}"
                + (f", {thr:.1f} req/s" if isinstance(thr, (int, float)) else "")
                + (f", p99 {p99:.2f} ms" if isinstance(p99, (int, float)) else "")
                + (f", {row['note']}" if row.get("note") else "")
                + f" ({time.monotonic() - t:.1f} s)")
        skipped = list(ctx.skipped)
        old_manifest = self.out / "manifest.json"
        earlier_manifest = {}
        if keep and old_manifest.exists():
            try:
                earlier_manifest = json.loads(old_manifest.read_text())
            except json.JSONDecodeError:
                earlier_manifest = {}
            # Keep what earlier invocations skipped, except for experiments re-planned now.
            earlier = earlier_manifest.get("skipped", [])
            replanned = set(only) if only else set(ex.EXPERIMENTS)
            skipped = [s for s in earlier if s.split(":", 1)[0] not in replanned and s not in skipped] + skipped
        # Every invocation that wrote rows here, oldest first (a subset rerun leaves the other
        # experiments' rows from earlier ones): what ran, with which commit and how long.
        history = list(earlier_manifest.get("invocations", [])) if keep else []
        if keep and earlier_manifest and not history:
            history.append({k: earlier_manifest.get(k) for k in
                            ("mode", "finished_at", "git_commit", "runs", "failed_runs", "seconds")}
                           | {"only": None, "reps": None})
        if self.args.replace:
            # Earlier subset runs of only these experiments no longer have rows here.
            for h in history:
                if h.get("only") and set(h["only"]) <= set(only) and not h.get("superseded"):
                    h["superseded"] = True
        history.append({
            "mode": "quick" if self.args.quick else "full",
            "finished_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "git_commit": self.commit, "only": only, "reps": self.args.reps,
            "resume": bool(self.args.resume), "replace": bool(self.args.replace),
            "runs": len(todo), "failed_runs": failures,
            "seconds": round(time.monotonic() - started, 1),
            "seconds_by_experiment": {k: round(v, 1) for k, v in spent.items()},
        })
        manifest = {
            "mode": "quick" if self.args.quick else "full",
            "config": config,
            "finished_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "git_commit": self.commit, "machine": self.machine, "pg_version": self.pg_version,
            "server_models": self.server_caps.models,
            "server_flags": sorted(self.server_caps.flags),
            "client_flags": sorted(self.client_caps.flags),
            "floor_bin": self.floor_bin if self.floor_caps else None,
            "floor_models": self.floor_caps.models if self.floor_caps else None,
            "skipped": skipped, "runs": len(todo), "failed_runs": failures,
            "seconds": round(time.monotonic() - started, 1),
            "reps_override": self.args.reps,
            "binaries": {name: procs.describe_binary(path) for name, path in
                         (("server", self.server_bin), ("client", self.client_bin),
                          ("floor", self.floor_bin if self.floor_caps else None)) if path},
            "placement": self.args.placement,
            "invocations": history,
        }
        (self.out / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n")
        log(f"sweep: done in {manifest['seconds']} s, {failures} failed run(s), "
            f"{len(ctx.skipped)} skipped cell group(s); rows in {self.csv_path}")
        return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", default=os.environ.get("WRITEUP_DATABASE_URL"),
                    help="PostgreSQL URL; the servers use databases PREFIX, PREFIX_r1.. on it")
    ap.add_argument("--db-prefix", default="writeup", help="name prefix of the databases used")
    ap.add_argument("--quick", action="store_true", help="the tiny version (CI)")
    ap.add_argument("--out", default=str(REPO / "writeup" / "results"))
    ap.add_argument("--logs", help="server and bench logs (default OUT/logs)")
    ap.add_argument("--only", help="comma-separated experiments: " + ",".join(ex.EXPERIMENTS))
    ap.add_argument("--reps", type=int, help="repetitions per cell (overrides the config)")
    ap.add_argument("--resume", action="store_true",
                    help="keep runs.csv and skip runs that already have an ok row")
    ap.add_argument("--replace", action="store_true",
                    help="with --only: set the named experiments' rows aside and run them again, "
                         "keeping every other experiment's rows")
    ap.add_argument("--dry-run", action="store_true", help="list the runs, run nothing")
    ap.add_argument("--server-bin", default=os.environ.get("EXCHANGE_SERVER_BIN",
                                                         str(REPO / "build" / "bin" / "exchange-server")))
    ap.add_argument("--client-bin", default=os.environ.get("EXCHANGE_CLIENT_BIN",
                                                         str(REPO / "build" / "bin" / "exchange-client")))
    ap.add_argument("--floor-bin", default=os.environ.get("EXCHANGE_FLOOR_BIN",
                                                        str(REPO / "build" / "bin" / "exchange-floor")),
                    help="the durable floor (exchange-floor); its runs are skipped if it is missing")
    ap.add_argument("--placement", default="server pinned with taskset as each cell says; "
                    "PostgreSQL and the bench client unpinned",
                    help="free text recorded in manifest.json")
    args = ap.parse_args(argv)
    if not args.db:
        ap.error("--db (or WRITEUP_DATABASE_URL) is required")
    if args.replace and not args.only:
        ap.error("--replace needs --only (without it, a run starts from empty results anyway)")
    if args.replace and args.resume:
        ap.error("--replace and --resume exclude each other (--replace keeps the other experiments' rows)")
    for b in (args.server_bin, args.client_bin):
        if not os.access(b, os.X_OK):
            ap.error(f"{b} is not an executable (build first: scripts/build.sh)")
    runner = Runner(args)
    try:
        return runner.run()
    finally:
        runner.cleanup()


if __name__ == "__main__":
    sys.exit(main())
