"""From runs.csv and the raw files to the numbers the figures and the report show.

Everything here reads results; nothing runs. Rows whose status is not "ok" never enter a
statistic, but are counted (a failed cell is reported, not hidden). Rows of the durable floor
(system "floor", exchange-floor) enter only the floor's own numbers: ok_rows and failed_rows
leave them out unless asked for them.
"""
from __future__ import annotations

import csv
import gzip
import json
import math
from collections import defaultdict
from pathlib import Path

from . import experiments as ex
from . import stats

NUMERIC = {
    "rep", "nproc", "mem_gib", "threads", "cores", "replicas", "clients", "rate",
    "orders_per_request", "persistent", "sim_io_ms", "duration_s", "warmup_s", "requests_target",
    "requests", "ok", "rejected", "error_replies", "conn_errors", "dropped", "completion_s",
    "throughput_rps", "throughput_items_ps", "lat_mean_ms", "lat_sd_ms", "lat_p50_ms",
    "lat_p90_ms", "lat_p95_ms", "lat_p99_ms", "lat_p999_ms", "lat_max_ms", "jit_2sd", "jit_3sd",
    "jit_4sd", "first_mean_ms", "first_sd_ms", "first_p50_ms", "first_p99_ms", "first_jit_2sd",
    "first_jit_3sd", "first_jit_4sd", "disagreements", "total_requests", "wall_s",
    "server_cpu_s", "pg_cpu_s", "client_cpu_s", "pg_commits", "server_threads_max",
    "server_rss_kb_max", "server_vsz_kb_max", "server_sockets_max", "srv_requests", "srv_commits",
    "srv_commit_ms", "host_load1", "host_cpu_some10", "tls_handshakes", "tls_resumed",
}

MODEL_ORDER = ex.MODELS


def _num(v: str):
    if v == "" or v is None:
        return None
    try:
        f = float(v)
    except ValueError:
        return v
    return int(f) if f.is_integer() and "." not in v and "e" not in v.lower() else f


def load_runs(results: Path) -> list[dict]:
    path = Path(results) / "runs.csv"
    if not path.exists():
        return []
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for k in NUMERIC:
            if k in r:
                r[k] = _num(r[k])
    return rows


def load_manifest(results: Path) -> dict:
    p = Path(results) / "manifest.json"
    return json.loads(p.read_text()) if p.exists() else {}


TAKEOVER_FILE = "takeover.json"


def load_takeover(results: Path) -> dict | None:
    """scripts/takeover_bench.py --json's results (section 4.1, fig17), or None if not run
    for this data set. Times are in seconds there; the medians here in ms."""
    p = Path(results) / TAKEOVER_FILE
    if not p.exists():
        return None
    d = json.loads(p.read_text())
    for key in ("restarts_s", "takeovers_s", "pauses_s"):
        xs = d.get(key) or []
        d[key.replace("_s", "_ms")] = ({"median": median_of([x * 1000 for x in xs]),
                                        "max": max(xs) * 1000, "min": min(xs) * 1000,
                                        "n": len(xs)} if xs else None)
    sides = [x[0] for x in d.get("takeover_server_ms") or []]
    d["server_side_ms"] = ({"median": median_of(sides), "max": max(sides), "min": min(sides),
                            "n": len(sides)} if sides else None)
    return d


def cost_sets(d: dict | None) -> list[dict]:
    """The standby's cost per set of rounds (takeover.json's cost.sets: each set's figures with
    set, when and started_at). A file from before the sets kept one set's figures in "cost"
    itself: that one set."""
    c = (d or {}).get("cost")
    if not c:
        return []
    if c.get("sets"):
        return c["sets"]
    one = {k: v for k, v in c.items() if k not in ("rounds", "seconds", "clients")}
    return [dict(one, set=1, when=None, started_at=d.get("started_at"))]


def set_pairs(s: dict) -> list[float]:
    """One set's pair ratios (each with-round over its alone neighbours)."""
    return s.get("pair_ratios") or [s["ratio_of_medians"]]


def pooled_cost(d: dict | None) -> dict | None:
    """Every set's pair ratios together: median, min, max, n (pairs) and sets, or None."""
    sets = cost_sets(d)
    pairs = [x for s in sets for x in set_pairs(s)]
    if not pairs:
        return None
    return {"median": median_of(pairs), "min": min(pairs), "max": max(pairs), "n": len(pairs),
            "sets": len(sets), "pairs": pairs}


def when_measured(rows: list[dict]) -> dict:
    """The dates (first to last, from started_at) and short commits of some rows."""
    dates = sorted({(r.get("started_at") or "")[:10] for r in rows} - {""})
    commits = sorted({short_commit(r.get("git_commit")) for r in rows})
    date = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}" if dates else "?"
    return {"date": date, "commit": ", ".join(commits) or "?"}


def short_commit(c: str | None) -> str:
    if not c:
        return "?"
    head, dirty = c.split("-", 1)[0], "-dirty" if c.endswith("-dirty") else ""
    return head[:7] + dirty


def median_of(xs: list[float]) -> float:
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def is_floor(r: dict) -> bool:
    """A run of exchange-floor (the durable floor), not of the exchange server."""
    return r.get("system") == "floor"


def ok_rows(rows: list[dict], experiment: str, floor: bool = False) -> list[dict]:
    return [r for r in rows if r["experiment"] == experiment and r["status"] == "ok"
            and is_floor(r) == floor]


def failed_rows(rows: list[dict], experiment: str, floor: bool = False) -> list[dict]:
    return [r for r in rows if r["experiment"] == experiment and r["status"] != "ok"
            and is_floor(r) == floor]


def group(rows: list[dict], *keys: str) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        out[tuple(r.get(k) for k in keys)].append(r)
    return dict(out)


def ci(rows: list[dict], field: str, scale: float = 1.0) -> stats.MeanCI | None:
    vals = [r[field] * scale for r in rows if isinstance(r.get(field), (int, float))]
    return stats.mean_ci95(vals) if vals else None


def reps_of(rows: list[dict], experiment: str) -> int:
    """Most repetitions any cell of the experiment has (ok runs)."""
    cells = group(ok_rows(rows, experiment), "cell")
    return max((len(v) for v in cells.values()), default=0)


def models_in(rows: list[dict]) -> list[str]:
    present = {r["model"] for r in rows}
    return [m for m in MODEL_ORDER if m in present] + sorted(present - set(MODEL_ORDER))


# ---- raw per-request files ------------------------------------------------------------------

def read_requests(results: Path, rel: str) -> list[dict]:
    """Rows of one per-request CSV (gzipped), measured requests only."""
    p = Path(results) / rel
    if not p.exists():
        return []
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rt", newline="") as f:
        return [r for r in csv.DictReader(f) if r.get("warmup") != "1"]


def served(r: dict) -> bool:
    return r.get("status") in ("ok", "rejected")


def latencies_ms(reqs: list[dict], field: str = "latency_us") -> list[float]:
    return [float(r[field]) / 1000.0 for r in reqs if served(r) and r.get(field)]


def read_metrics(results: Path, rel: str) -> list[dict]:
    p = Path(results) / rel
    if not rel or not p.exists():
        return []
    with open(p, newline="") as f:
        return [{k: _num(v) for k, v in r.items()} for r in csv.DictReader(f)]


# ---- per experiment -------------------------------------------------------------------------

def scaling_curves(rows: list[dict], floor: bool = False) -> dict[int, dict[str, list[tuple[int, stats.MeanCI, int]]]]:
    """cores -> model -> [(clients, throughput CI, failed runs)] sorted by clients (floor=True:
    the durable floor's runs, by the model it ran in)."""
    ok = ok_rows(rows, "scaling", floor)
    bad = failed_rows(rows, "scaling", floor)
    out: dict[int, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for (cores, model, clients), rs in sorted(group(ok, "cores", "model", "clients").items(),
                                              key=lambda kv: (kv[0][0], str(kv[0][1]), kv[0][2])):
        nbad = sum(1 for b in bad if (b["cores"], b["model"], b["clients"]) == (cores, model, clients))
        out[cores][model].append((clients, ci(rs, "throughput_rps"), nbad))
    return {k: dict(v) for k, v in out.items()}


def scaling_latency(rows: list[dict], field: str, floor: bool = False) -> dict[int, dict[str, list[tuple[int, stats.MeanCI]]]]:
    out: dict[int, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for (cores, model, clients), rs in sorted(group(ok_rows(rows, "scaling", floor), "cores", "model", "clients").items(),
                                              key=lambda kv: (kv[0][0], str(kv[0][1]), kv[0][2])):
        out[cores][model].append((clients, ci(rs, field)))
    return {k: dict(v) for k, v in out.items()}


def floor_label(model: str) -> str:
    return f"floor ({model})"


def percentiles_by_model(rows: list[dict]) -> tuple[int | None, int | None, dict[str, dict[str, stats.MeanCI]]]:
    """At the most clients measured on the most cores: model -> {p50, p90, p99: CI of the
    per-run percentile}; the durable floor's runs there follow as "floor (MODEL)"."""
    ok = ok_rows(rows, "scaling")
    if not ok:
        return None, None, {}
    cores = max(r["cores"] for r in ok)
    at = [r for r in ok if r["cores"] == cores]
    clients = max(r["clients"] for r in at)
    out = {}
    for model in models_in(at):
        rs = [r for r in at if r["model"] == model and r["clients"] == clients]
        if rs:
            out[model] = {p: ci(rs, f"lat_{p}_ms") for p in ("p50", "p90", "p99")}
    fl = [r for r in ok_rows(rows, "scaling", floor=True) if r["cores"] == cores and r["clients"] == clients]
    for model in models_in(fl):
        rs = [r for r in fl if r["model"] == model]
        out[floor_label(model)] = {p: ci(rs, f"lat_{p}_ms") for p in ("p50", "p90", "p99")}
    return cores, clients, out


def floor_of(floor: dict[str, list], model: str) -> tuple[str, list] | None:
    """The floor curve to hold a model against: the floor run in the same model if there is
    one, else in reactor, else any."""
    for m in (model, "reactor", *sorted(floor)):
        if m in floor:
            return m, floor[m]
    return None


def ratio_ci(a: stats.MeanCI, b: stats.MeanCI) -> tuple[float, float] | None:
    """a.mean / b.mean with an approximate 95% half-width (first-order error propagation: the
    relative half-widths add in quadrature)."""
    if a is None or b is None or not b.mean:
        return None
    r = a.mean / b.mean
    rel = math.hypot(a.half_width / a.mean if a.mean else 0.0, b.half_width / b.mean)
    return r, abs(r) * rel


def share_of_floor(rows: list[dict]) -> dict[int, dict[str, list[tuple[int, float, float, str]]]]:
    """cores -> model -> [(clients, throughput / floor throughput, ± half-width, floor model)]
    for every cell where both were measured."""
    curves, floor = scaling_curves(rows), scaling_curves(rows, floor=True)
    out: dict[int, dict[str, list]] = {}
    for cores, models in curves.items():
        if cores not in floor:
            continue
        for model, pts in models.items():
            f = floor_of(floor[cores], model)
            if not f:
                continue
            fm, fpts = f
            by_c = {p[0]: p[1] for p in fpts}
            for clients, c, _ in pts:
                rc = ratio_ci(c, by_c.get(clients))
                if rc:
                    out.setdefault(cores, {}).setdefault(model, []).append((clients, rc[0], rc[1], fm))
    return out


def floor_pairs(rows: list[dict], cores: int, clients: int, model: str, floor_model: str) -> list[float]:
    """The model's throughput over the floor's, one ratio per repetition of a (cores, clients)
    cell: each repetition runs every model and then the floor back to back."""
    def pick(rs, m):
        return [r for r in rs if (r["cores"], r["clients"], r["model"]) == (cores, clients, m)]
    return paired_ratios(pick(ok_rows(rows, "scaling"), model),
                         pick(ok_rows(rows, "scaling", floor=True), floor_model))


def floor_summary(rows: list[dict]) -> list[dict]:
    """Per core count, at 64 clients (the throughput issue's cell) or else the most measured:
    the model with the largest share of the floor, that share (ratio of the means, ± its
    half-width), every repetition's paired ratio (pairs; pairs_by_model for every model),
    both throughputs and p99s (MeanCI), and when the cell's runs were measured."""
    shares, curves, floor = share_of_floor(rows), scaling_curves(rows), scaling_curves(rows, floor=True)
    p99, fp99 = scaling_latency(rows, "lat_p99_ms"), scaling_latency(rows, "lat_p99_ms", floor=True)
    out = []
    for k in sorted(shares):
        allc = sorted({p[0] for pts in shares[k].values() for p in pts})
        c = 64 if 64 in allc else max(allc)
        at = {m: p for m, pts in shares[k].items() for p in pts if p[0] == c}
        if not at:
            continue
        best = max(at, key=lambda m: at[m][1])
        _, r, h, fm = at[best]

        def pick(curve, m):
            return next((x[1] for x in curve.get(k, {}).get(m, []) if x[0] == c), None)
        cell = [x for x in rows if x["experiment"] == "scaling" and x["status"] == "ok"
                and x["cores"] == k and x["clients"] == c]
        out.append({"cores": k, "clients": c, "model": best, "floor_model": fm, "share": r,
                    "half_width": h, "floor": pick(floor, fm), "throughput": pick(curves, best),
                    "p99": pick(p99, best), "floor_p99": pick(fp99, fm),
                    "pairs": floor_pairs(rows, k, c, best, fm),
                    "pairs_by_model": {m: floor_pairs(rows, k, c, m, at[m][3]) for m in at},
                    **when_measured(cell)})
    return out


def poolsize_curves(rows: list[dict]) -> dict[int, list[tuple[int, dict[str, stats.MeanCI], stats.MeanCI]]]:
    """sim_io_ms -> [(threads, {p50, p90, p99}, throughput)] sorted by threads."""
    out: dict[int, list] = defaultdict(list)
    for (io, threads), rs in sorted(group(ok_rows(rows, "poolsize"), "sim_io_ms", "threads").items(),
                                    key=lambda kv: (kv[0][0] or 0, kv[0][1])):
        out[io or 0].append((threads, {p: ci(rs, f"lat_{p}_ms") for p in ("p50", "p90", "p99")},
                             ci(rs, "throughput_rps")))
    return dict(out)


def seed003_table1(rows: list[dict]) -> dict[tuple[str, int], dict]:
    """(model, clients) -> totals (ms) per test, mean CI, delay per request, throughput."""
    out = {}
    allrows = [r for r in rows if r["experiment"] == "seed003_clients"]
    for (model, clients), rs in group(allrows, "model", "clients").items():
        good = [r for r in rs if r["status"] == "ok" and not r.get("conn_errors") and not r.get("error_replies")]
        totals = [r["completion_s"] * 1000 for r in good if isinstance(r.get("completion_s"), (int, float))]
        entry = {"totals_ms": totals, "runs": len(rs), "failed": len(rs) - len(good)}
        if totals:
            entry["ci"] = stats.mean_ci95(totals)
            entry["row"] = stats.completion_row(totals, clients)
        out[(model, clients)] = entry
    return out


def seed003_table2(rows: list[dict]) -> dict[tuple[str, int], dict]:
    """(workload, cores) -> the same as table 1, 100 requests."""
    out = {}
    allrows = [r for r in rows if r["experiment"] == "seed003_cores"]
    for (kind, cores), rs in group(allrows, "workload", "cores").items():
        good = [r for r in rs if r["status"] == "ok" and not r.get("conn_errors") and not r.get("error_replies")]
        totals = [r["completion_s"] * 1000 for r in good if isinstance(r.get("completion_s"), (int, float))]
        n = rs[0].get("requests_target") or 100
        entry = {"totals_ms": totals, "runs": len(rs), "failed": len(rs) - len(good), "requests": n}
        if totals:
            entry["ci"] = stats.mean_ci95(totals)
            entry["row"] = stats.completion_row(totals, n)
        out[(kind, cores)] = entry
    return out


def seed002_samples(results: Path, rows: list[dict]) -> dict[int, dict[str, list[float]]]:
    """replicas -> {"vote": all-replies RTTs (ms), "first": first-reply RTTs} over all reps."""
    out: dict[int, dict[str, list[float]]] = {}
    for (n,), rs in sorted(group(ok_rows(rows, "seed002"), "replicas").items()):
        vote, first = [], []
        for r in sorted(rs, key=lambda r: r["rep"]):
            reqs = read_requests(results, r.get("requests_csv") or "")
            vote += latencies_ms(reqs, "latency_us")
            first += latencies_ms(reqs, "first_latency_us")
        out[n] = {"vote": vote, "first": first}
    return out


def seed002_series(results: Path, rows: list[dict]) -> dict[int, list[float]]:
    """replicas -> RTT (ms, all replies) by request index, repetition 1."""
    out = {}
    for (n,), rs in sorted(group(ok_rows(rows, "seed002"), "replicas").items()):
        r = min(rs, key=lambda r: r["rep"])
        reqs = sorted(read_requests(results, r.get("requests_csv") or ""), key=lambda q: int(q["index"]))
        out[n] = [float(q["latency_us"]) / 1000 for q in reqs if served(q)]
    return out


def seed000_series(results: Path, rows: list[dict]) -> dict[tuple[int, int], dict[str, list[float]]]:
    """(clients, replicas) -> {pool|spawn: mean RTT (ms) by request index over repetitions}."""
    out: dict[tuple[int, int], dict[str, list[float]]] = defaultdict(dict)
    for (clients, replicas, threads), rs in group(ok_rows(rows, "seed000"), "clients", "replicas",
                                                  "client_threads").items():
        by_index: dict[int, list[float]] = defaultdict(list)
        for r in rs:
            for q in read_requests(results, r.get("requests_csv") or ""):
                if served(q):
                    by_index[int(q["index"])].append(float(q["latency_us"]) / 1000)
        n = max(by_index) + 1 if by_index else 0
        out[(clients, replicas)][threads] = [stats.mean(by_index[i]) if by_index.get(i) else math.nan
                                             for i in range(n)]
    return dict(out)


def seed000_means(rows: list[dict]) -> dict[tuple[int, int, str], stats.MeanCI]:
    return {k: ci(rs, "lat_mean_ms") for k, rs in
            group(ok_rows(rows, "seed000"), "clients", "replicas", "client_threads").items()}


def seed001_runs(results: Path, rows: list[dict]) -> dict[str, list[dict]]:
    """system (cell) -> per repetition: per-second series and the latencies.

    Each entry: seconds (list of t), arrivals, responses (per second, from the requests'
    intended and end times), threads and target (from --metrics, per second), latencies (ms),
    duration."""
    out: dict[str, list[dict]] = defaultdict(list)
    for r in sorted(ok_rows(rows, "seed001"), key=lambda r: (r["cell"], r["rep"])):
        base = Path(results) / "raw" / "seed001"
        stem = f"{r['cell']}_r{r['rep']}"
        starts_p = base / f"{stem}_starts.json"
        if not starts_p.exists():
            continue
        starts = json.loads(starts_p.read_text())
        intended, ends, lat = [], [], []
        for name, t0 in starts.items():
            for q in read_requests(results, f"raw/seed001/{stem}_{name}.csv.gz"):
                intended.append(t0 + float(q["intended_us"]) / 1e6)
                if served(q):
                    ends.append(t0 + float(q["end_us"]) / 1e6)
                    lat.append(float(q["latency_us"]) / 1000)
        if not intended:
            continue
        t0 = min(starts.values())
        horizon = int(math.ceil(max(ends + intended) - t0)) + 1
        metrics = read_metrics(results, r.get("metrics_csv") or "")
        m_t, m_threads, m_target, m_busy, m_queue = [], [], [], [], []
        for m in metrics:
            if isinstance(m.get("time"), (int, float)):
                m_t.append(m["time"] - t0)
                m_threads.append(m.get("threads"))
                m_target.append(m.get("target_threads"))
                m_busy.append(m.get("busy_threads"))
                m_queue.append(m.get("queue_length"))
        out[r["cell"]].append({
            "rep": r["rep"], "model": r["model"],
            "seconds": list(range(horizon)),
            "arrivals": stats.per_second_counts(intended, t0, horizon),
            "responses": stats.per_second_counts(ends, t0, horizon),
            "m_t": m_t, "threads": m_threads, "target": m_target, "busy": m_busy, "queue": m_queue,
            "latencies": lat, "duration": r.get("duration_s"), "served": len(lat),
            "completion_s": r.get("completion_s"), "throughput": r.get("throughput_rps"),
            "requests": len(intended),
        })
    return dict(out)


def seed001_order(cells) -> list[str]:
    return sorted(cells, key=lambda c: (0 if c.startswith("pool") else 1 if c == "fotp" else 2, c))


def memory_points(results: Path, rows: list[dict]) -> dict[str, list[dict]]:
    """model -> [{connections, threads, rss_mb (CI), vsz_mb, source}] sorted by connections.

    Threads and virtual size from /proc while the sessions were held; resident memory from the
    server's --metrics rows (rss_kb, largest) where present, else from /proc."""
    out: dict[str, list[dict]] = defaultdict(list)
    for (model, n), rs in sorted(group(ok_rows(rows, "memory"), "model", "clients").items(),
                                 key=lambda kv: (str(kv[0][0]), kv[0][1])):
        rss, threads, vsz, src = [], [], [], set()
        for r in rs:
            m = [x.get("rss_kb") for x in read_metrics(results, r.get("metrics_csv") or "")
                 if isinstance(x.get("rss_kb"), (int, float))]
            if m:
                rss.append(max(m) / 1024)
                src.add("--metrics")
            elif r.get("server_rss_kb_max"):
                rss.append(r["server_rss_kb_max"] / 1024)
                src.add("/proc")
            threads.append(r.get("server_threads_max") or 0)
            vsz.append((r.get("server_vsz_kb_max") or 0) / 1024)
        out[model].append({"connections": n, "threads": stats.mean(threads),
                           "rss_mb": stats.mean_ci95(rss) if rss else None,
                           "vsz_mb": stats.mean(vsz), "source": "/".join(sorted(src))})
    return dict(out)


def slope(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope (None for fewer than 2 distinct x)."""
    if len(xs) < 2 or len(set(xs)) < 2:
        return None
    mx, my = stats.mean(xs), stats.mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def bottleneck(rows: list[dict], floor: bool = False) -> list[dict]:
    """Per model, on the most cores, at the client count with the highest mean throughput:
    CPU milliseconds per request of the server, PostgreSQL and the client, requests per commit,
    commits per second and the throughput. floor=True: the same for the durable floor's runs
    (on the cores of the server's runs, if it has them), "model" being "floor (MODEL)"."""
    ok = ok_rows(rows, "scaling", floor)
    if not ok:
        return []
    server = ok_rows(rows, "scaling")
    cores = max(r["cores"] for r in (server or ok))
    if not any(r["cores"] == cores for r in ok):
        cores = max(r["cores"] for r in ok)
    out = []
    for model in models_in([r for r in ok if r["cores"] == cores]):
        cells = group([r for r in ok if r["cores"] == cores and r["model"] == model], "clients")
        best = max(cells.items(), key=lambda kv: stats.mean([r["throughput_rps"] for r in kv[1]]))
        clients, rs = best[0][0], best[1]

        def per_req(field):
            vals = [1000 * r[field] / r["total_requests"] for r in rs
                    if isinstance(r.get(field), (int, float)) and r.get("total_requests")]
            return stats.mean_ci95(vals) if vals else None

        commits_ps = [r["pg_commits"] / r["wall_s"] for r in rs
                      if isinstance(r.get("pg_commits"), (int, float)) and r.get("wall_s")]
        per_commit = [r["total_requests"] / r["pg_commits"] for r in rs
                      if r.get("pg_commits") and r.get("total_requests")]
        cpu_share = [r["pg_cpu_s"] / (r["pg_cpu_s"] + r["server_cpu_s"] + r["client_cpu_s"])
                     for r in rs if all(isinstance(r.get(f), (int, float)) for f in
                                        ("pg_cpu_s", "server_cpu_s", "client_cpu_s"))
                     and (r["pg_cpu_s"] + r["server_cpu_s"] + r["client_cpu_s"]) > 0]
        busy = [(r["pg_cpu_s"] + r["server_cpu_s"] + r["client_cpu_s"]) / r["wall_s"] for r in rs
                if all(isinstance(r.get(f), (int, float)) for f in
                       ("pg_cpu_s", "server_cpu_s", "client_cpu_s", "wall_s")) and r["wall_s"]]
        commit_ms = [r["srv_commit_ms"] for r in rs if isinstance(r.get("srv_commit_ms"), (int, float))]
        per_group = [r["srv_requests"] / r["srv_commits"] for r in rs
                     if isinstance(r.get("srv_requests"), (int, float)) and r.get("srv_commits")]
        out.append({
            "model": floor_label(model) if floor else model, "cores": cores, "clients": clients,
            "commit_ms": stats.mean_ci95(commit_ms) if commit_ms else None,
            "throughput": ci(rs, "throughput_rps"),
            "server_ms": per_req("server_cpu_s"), "pg_ms": per_req("pg_cpu_s"),
            "client_ms": per_req("client_cpu_s"),
            "commits_ps": stats.mean_ci95(commits_ps) if commits_ps else None,
            "requests_per_commit": stats.mean_ci95(per_commit) if per_commit else None,
            "requests_per_group_commit": stats.mean_ci95(per_group) if per_group else None,
            "pg_share": stats.mean(cpu_share) if cpu_share else None,
            "cpus_busy": stats.mean(busy) if busy else None,
        })
    return out


# ---- the cost of security -------------------------------------------------------------------

def _per_request_us(rs: list[dict], field: str) -> stats.MeanCI | None:
    """CPU µs per request of one process, over every request of each run (setup, warm-up)."""
    vals = [1e6 * r[field] / r["total_requests"] for r in rs
            if isinstance(r.get(field), (int, float)) and r.get("total_requests")]
    return stats.mean_ci95(vals) if vals else None


def paired_ratios(tls: list[dict], plain: list[dict], field: str = "throughput_rps") -> list[float]:
    """TLS / plaintext of `field`, one per repetition that has an ok run of both legs."""
    ref = {r["rep"]: r[field] for r in plain if r.get(field)}
    return [r[field] / ref[r["rep"]] for r in sorted(tls, key=lambda r: r["rep"])
            if r["rep"] in ref and isinstance(r.get(field), (int, float))]


def security_legs(rows: list[dict]) -> list[dict]:
    """One entry per (model, connections, leg) of the security experiment, in the plan's order:
    throughput, p50 and p99 (mean ± 95% CI over the repetitions), CPU µs per request of the
    server, PostgreSQL and the client, the bench's TLS handshakes (median per run) and, for a
    TLS leg, the paired TLS/plaintext throughput ratios (one per repetition)."""
    ok = ok_rows(rows, "security")
    out = []
    for model in models_in(ok):
        for conn, legs in ex.SECURITY_LEGS.items():
            cells = {leg.name: [r for r in ok if r["cell"] == f"{model}-{conn}-{leg.name}"] for leg in legs}
            for leg in legs:
                rs = cells[leg.name]
                if not rs:
                    continue
                shakes = [r["tls_handshakes"] for r in rs if isinstance(r.get("tls_handshakes"), (int, float))]
                resumed = [r["tls_resumed"] for r in rs if isinstance(r.get("tls_resumed"), (int, float))]
                out.append({
                    "model": model, "connections": conn, "leg": leg, "n": len(rs),
                    "clients": rs[0].get("clients"), "throughput": ci(rs, "throughput_rps"),
                    "p50": ci(rs, "lat_p50_ms"), "p99": ci(rs, "lat_p99_ms"),
                    "cpu_us": {p: _per_request_us(rs, f"{p}_cpu_s") for p in ("server", "pg", "client")},
                    "handshakes": median_of(shakes) if shakes else None,
                    "resumed": median_of(resumed) if resumed else None,
                    "ratios": (paired_ratios(rs, cells[ex.PLAIN.name])
                               if leg.transport == "tls" else None),
                })
    return out
