"""The figures: one PNG per figure in FIGURES, always written (a figure whose data is missing
says so on the picture instead of failing, so the report and the CI check see every file).

    python -m study.plots RESULTS_DIR FIGURES_DIR
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

from . import analysis as an  # noqa: E402
from . import experiments as ex  # noqa: E402
from . import stats  # noqa: E402

# name -> title (the report's captions are written in report.py)
FIGURES = {
    "fig01_throughput_vs_clients": "Throughput vs clients per model and the durable floor (95% CI)",
    "fig02_latency_vs_clients": "p50 and p99 latency vs clients per model",
    "fig03_seed003_clients": "Seed 003 table 1: per-client vs 40-thread pool",
    "fig04_seed003_cores": "Seed 003 table 2: 1 vs 2 cores, create vs transactions",
    "fig05_percentiles_by_model": "Latency percentiles per model",
    "fig06_percentiles_vs_poolsize": "Latency percentiles vs fixed pool size",
    "fig07_seed001_load": "Seed 001 fig. 3: Poisson load (arrivals per second)",
    "fig08_seed001_poolsize": "Seed 001 fig. 4: pool size over time",
    "fig09_seed001_throughput": "Seed 001 fig. 5: responses per second over time",
    "fig10_seed001_avg_responses": "Seed 001 fig. 6: average responses per second",
    "fig11_seed001_percentiles": "Seed 001 fig. 7: response time percentiles",
    "fig12_seed002_histograms": "Seed 002 figs. 3-4: round-trip histograms",
    "fig13_seed002_series": "Seed 002 figs. 1-2: round trip by request",
    "fig14_seed000_series": "Seed 000 figs. 1-3: round trip by request index",
    "fig15_memory_vs_threads": "Seed 004 fig. 9: memory vs threads",
    "fig16_cpu_per_request": "CPU per request: server, PostgreSQL, client",
    "fig17_takeover": "A hot standby: takeover vs restart, a paused leader, the standby's cost",
    "fig18_security": "The cost of security: TLS/plaintext throughput per leg",
}

COLORS = {
    "reactor": "#1f77b4", "per-request": "#d62728", "per-client": "#2ca02c", "pool": "#ff7f0e",
    "fotp": "#9467bd", "adaptive": "#8c564b",
}
MARKERS = {"reactor": "o", "per-request": "x", "per-client": "s", "pool": "^", "fotp": "D",
           "adaptive": "v"}


def color(name: str) -> str:
    for k, c in COLORS.items():
        if name == k or name.startswith(k + "-"):
            return c
    return "#7f7f7f"


def _fig(w=7.0, h=4.2, ncols=1, nrows=1, **kw):
    fig, axes = plt.subplots(nrows, ncols, figsize=(w, h), squeeze=False, **kw)
    return fig, axes


def _save(fig, out: Path, name: str) -> Path:
    path = out / f"{name}.png"
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def placeholder(out: Path, name: str, reason: str) -> Path:
    fig, ax = _fig(7, 2.2)
    ax = ax[0][0]
    ax.axis("off")
    ax.text(0.5, 0.6, FIGURES[name], ha="center", va="center", fontsize=12, weight="bold")
    ax.text(0.5, 0.3, f"no data: {reason}", ha="center", va="center", fontsize=10, wrap=True)
    return _save(fig, out, name)


def _errorbar(ax, xs, cis, label, c, marker="o"):
    ys = [x.mean for x in cis]
    err = [x.half_width for x in cis]
    ax.errorbar(xs, ys, yerr=err, label=label, color=c, marker=marker, capsize=3, lw=1.5, ms=5)


# ---- the main sweep -------------------------------------------------------------------------

FLOOR_COLOR = "#000000"


def _floor_band(ax, pts, label):
    """The durable floor: its mean as a dashed black line over a grey band (its 95% CI)."""
    xs = [p[0] for p in pts]
    ax.fill_between(xs, [max(0.0, p[1].low) for p in pts], [p[1].high for p in pts],
                    color=FLOOR_COLOR, alpha=0.12, lw=0)
    ax.plot(xs, [p[1].mean for p in pts], color=FLOOR_COLOR, ls="--", lw=1.8, label=label)


def fig01(rows, out):
    name = "fig01_throughput_vs_clients"
    curves = an.scaling_curves(rows)
    floor = an.scaling_curves(rows, floor=True)
    if not curves:
        return placeholder(out, name, "no scaling runs")
    cores = sorted(curves)
    shares = an.share_of_floor(rows)
    two = any(shares.get(k) for k in cores)
    fig, axes = _fig(5.2 * len(cores), 8.2 if two else 4.4, ncols=len(cores), nrows=2 if two else 1,
                     sharey="row", sharex="col")
    for i, k in enumerate(cores):
        ax = axes[0][i]
        for fm, pts in sorted(floor.get(k, {}).items()):
            _floor_band(ax, pts, f"durable floor (exchange-floor, {fm})")
        for model in an.models_in([{"model": m} for m in curves[k]]):
            pts = curves[k][model]
            _errorbar(ax, [p[0] for p in pts], [p[1] for p in pts], model, color(model),
                      MARKERS.get(model, "o"))
            for clients, c, nbad in pts:
                if nbad:
                    ax.annotate(f"{nbad} failed", (clients, c.mean), fontsize=7, color="red")
        ax.set_xscale("log", base=2)
        ax.set_title(f"server pinned to {k} core{'s' if k > 1 else ''}")
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
        xs = sorted({p[0] for pts in curves[k].values() for p in pts})
        if two:
            ax2 = axes[1][i]
            for model in an.models_in([{"model": m} for m in shares.get(k, {})]):
                pts = shares[k][model]
                ax2.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=[p[2] for p in pts],
                             label=model, color=color(model), marker=MARKERS.get(model, "o"),
                             capsize=3, lw=1.5, ms=5)
            ax2.axhline(1.0, color=FLOOR_COLOR, ls="--", lw=1.2)
            ax2.set_xscale("log", base=2)
            top = max((p[1] for pts in shares.get(k, {}).values() for p in pts), default=1.0)
            ax2.set_ylim(0, max(1.2, 1.3 * top))  # a 2-run interval may reach far beyond
            ax2.set_title("share of the durable floor (1 = the floor)", fontsize=9)
            ax2.grid(alpha=0.3)
        axes[-1][i].set_xlabel("concurrent clients (closed loop, no think time)")
        axes[-1][i].set_xticks(xs, [str(x) for x in xs])
        axes[-1][i].minorticks_off()
    axes[0][0].set_ylabel("throughput (requests/s, mean ± 95% CI)")
    if two:
        axes[1][0].set_ylabel("model / floor throughput (≈95% CI)")
    axes[0][-1].legend(fontsize=7)
    return _save(fig, out, name)


def fig02(rows, out):
    name = "fig02_latency_vs_clients"
    p50 = an.scaling_latency(rows, "lat_p50_ms")
    p99 = an.scaling_latency(rows, "lat_p99_ms")
    f50 = an.scaling_latency(rows, "lat_p50_ms", floor=True)
    f99 = an.scaling_latency(rows, "lat_p99_ms", floor=True)
    if not p50:
        return placeholder(out, name, "no scaling runs")
    cores = max(p50)
    fig, axes = _fig(10, 4.2, ncols=2)
    for ax, data, fdata, what in ((axes[0][0], p50, f50, "p50"), (axes[0][1], p99, f99, "p99")):
        for fm, pts in sorted(fdata.get(cores, {}).items()):
            pts = [p for p in pts if p[1]]
            if pts:
                _floor_band(ax, pts, f"durable floor ({fm})")
        for model in an.models_in([{"model": m} for m in data[cores]]):
            pts = [p for p in data[cores][model] if p[1]]
            _errorbar(ax, [p[0] for p in pts], [p[1] for p in pts], model, color(model),
                      MARKERS.get(model, "o"))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        xs = sorted({p[0] for pts in data[cores].values() for p in pts})
        ax.set_xticks(xs, [str(x) for x in xs])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_xlabel("concurrent clients")
        ax.set_ylabel(f"{what} latency (ms, mean ± 95% CI over runs)")
        ax.set_title(f"{what}, server on {cores} core{'s' if cores > 1 else ''}")
        ax.grid(alpha=0.3, which="both")
    axes[0][1].legend(fontsize=8)
    return _save(fig, out, name)


def fig03(rows, out):
    name = "fig03_seed003_clients"
    t = an.seed003_table1(rows)
    if not any("ci" in e for e in t.values()):
        return placeholder(out, name, "no seed003_clients runs")
    models = [m for m in ("per-client", "pool") if any(k[0] == m for k in t)]
    clients = sorted({k[1] for k in t})
    fig, axes = _fig(10, 4, ncols=2)
    w = 0.38
    for i, m in enumerate(models):
        xs = [j + (i - 0.5) * w for j in range(len(clients))]
        es = [t.get((m, c), {}) for c in clients]
        label = "thread per client" if m == "per-client" else "40-thread pool"
        axes[0][0].bar(xs, [e["ci"].mean if "ci" in e else 0 for e in es], w,
                       yerr=[e["ci"].half_width if "ci" in e else 0 for e in es],
                       color=color(m), capsize=3, label=label)
        axes[0][1].bar(xs, [e["row"].throughput_rps if "row" in e else 0 for e in es], w,
                       color=color(m), label=label)
        for x, e in zip(xs, es):
            if e.get("failed"):
                axes[0][0].annotate(f"{e['failed']} failed", (x, 0), fontsize=7, color="red",
                                    rotation=90, va="bottom", ha="center")
    for ax in axes[0]:
        ax.set_xticks(range(len(clients)), [str(c) for c in clients])
        ax.set_xlabel("concurrent clients (one request each)")
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("time to finish all requests (ms, 95% CI)")
    axes[0][1].set_ylabel("throughput (requests / mean time)")
    return _save(fig, out, name)


def fig04(rows, out):
    name = "fig04_seed003_cores"
    t = an.seed003_table2(rows)
    if not any("ci" in e for e in t.values()):
        return placeholder(out, name, "no seed003_cores runs")
    kinds = [k for k in ("create", "transactions") if any(x[0] == k for x in t)]
    cores = sorted({x[1] for x in t})
    fig, axes = _fig(10, 4, ncols=2)
    w = 0.8 / max(1, len(cores))
    for i, k in enumerate(cores):
        xs = [j + (i - (len(cores) - 1) / 2) * w for j in range(len(kinds))]
        es = [t.get((kind, k), {}) for kind in kinds]
        c = plt.cm.viridis(0.25 + 0.5 * i / max(1, len(cores) - 1))
        axes[0][0].bar(xs, [e["ci"].mean if "ci" in e else 0 for e in es], w,
                       yerr=[e["ci"].half_width if "ci" in e else 0 for e in es], capsize=3,
                       color=c, label=f"{k} core{'s' if k > 1 else ''}")
        axes[0][1].bar(xs, [e["row"].throughput_rps if "row" in e else 0 for e in es], w,
                       color=c, label=f"{k} core{'s' if k > 1 else ''}")
    for ax in axes[0]:
        ax.set_xticks(range(len(kinds)), [f"100 <{k}>" for k in kinds])
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("time to finish all 100 requests (ms, 95% CI)")
    axes[0][1].set_ylabel("throughput (requests/s)")
    return _save(fig, out, name)


def fig05(rows, out):
    name = "fig05_percentiles_by_model"
    cores, clients, data = an.percentiles_by_model(rows)
    if not data:
        return placeholder(out, name, "no scaling runs")
    models = list(data)
    fig, axes = _fig(8, 4.2)
    ax = axes[0][0]
    w = 0.26
    for i, p in enumerate(("p50", "p90", "p99")):
        xs = [j + (i - 1) * w for j in range(len(models))]
        ys = [data[m][p].mean if data[m][p] else 0 for m in models]
        es = [data[m][p].half_width if data[m][p] else 0 for m in models]
        ax.bar(xs, ys, w, yerr=es, capsize=3, label=p, color=plt.cm.plasma(0.15 + 0.3 * i))
    ax.set_xticks(range(len(models)), [m.replace(" (", "\n(") for m in models])
    ax.set_yscale("log")
    ax.set_ylabel("latency (ms, mean of per-run percentile ± 95% CI)")
    ax.set_title(f"{clients} clients, server on {cores} core{'s' if cores > 1 else ''}")
    ax.grid(alpha=0.3, axis="y", which="both")
    ax.legend(fontsize=8)
    return _save(fig, out, name)


def fig06(rows, out):
    name = "fig06_percentiles_vs_poolsize"
    data = an.poolsize_curves(rows)
    if not data:
        return placeholder(out, name, "no poolsize runs")
    ios = sorted(data)
    fig, axes = _fig(5.2 * len(ios), 4.2, ncols=len(ios))
    for ax, io in zip(axes[0], ios):
        pts = data[io]
        for i, p in enumerate(("p50", "p90", "p99")):
            ok = [x for x in pts if x[1][p]]
            _errorbar(ax, [x[0] for x in ok], [x[1][p] for x in ok], p,
                      plt.cm.plasma(0.15 + 0.3 * i))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("fixed pool size (--threads)")
        ax.set_ylabel("latency (ms, 95% CI)")
        ax2 = ax.twinx()
        ax2.plot([x[0] for x in pts], [x[2].mean if x[2] else math.nan for x in pts], "k--",
                 lw=1, label="throughput")
        ax2.set_ylabel("throughput (req/s, dashed)")
        ax.set_title("no simulated I/O" if not io else f"{io} ms simulated I/O per order")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8, loc="upper center")
    return _save(fig, out, name)


# ---- seed 001 -------------------------------------------------------------------------------

def _seed001(results, rows):
    return an.seed001_runs(results, rows)


def fig07(results, rows, out):
    name = "fig07_seed001_load"
    runs = _seed001(results, rows)
    if not runs:
        return placeholder(out, name, "no seed001 runs (needs --metrics and --simulated-io-ms-per-child)")
    fig, axes = _fig(8, 3.6)
    ax = axes[0][0]
    for cell in an.seed001_order(runs):
        r = runs[cell][0]
        ax.bar([s + 0.5 for s in r["seconds"]], r["arrivals"], 1.0, alpha=0.35,
               color=color(cell), label=f"{cell} (rep {r['rep']})")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("requests sent in that second")
    ax.set_title("Poisson arrivals of the four request classes")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return _save(fig, out, name)


def fig08(results, rows, out):
    name = "fig08_seed001_poolsize"
    runs = _seed001(results, rows)
    if not runs or not any(r["m_t"] for rs in runs.values() for r in rs):
        return placeholder(out, name, "no seed001 runs with --metrics")
    fig, axes = _fig(8, 4)
    ax = axes[0][0]
    for cell in an.seed001_order(runs):
        r = runs[cell][0]
        th = [(t, v) for t, v in zip(r["m_t"], r["threads"]) if isinstance(v, (int, float))]
        if th:
            ax.step([t for t, _ in th], [v for _, v in th], where="post", color=color(cell),
                    label=f"{cell}: threads")
        tg = [(t, v) for t, v in zip(r["m_t"], r["target"]) if isinstance(v, (int, float))]
        if tg:
            ax.step([t for t, _ in tg], [v for _, v in tg], where="post", color=color(cell),
                    ls=":", label=f"{cell}: target")
        arr = r["arrivals"]
        if cell == an.seed001_order(runs)[0]:
            ax.plot([s + 1 for s in r["seconds"]], arr, color="gray", lw=0.8, alpha=0.6,
                    label="arrivals/s (λ)")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("threads in the pool (server --metrics)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return _save(fig, out, name)


def fig09(results, rows, out):
    name = "fig09_seed001_throughput"
    runs = _seed001(results, rows)
    if not runs:
        return placeholder(out, name, "no seed001 runs")
    fig, axes = _fig(8, 4)
    ax = axes[0][0]
    for cell in an.seed001_order(runs):
        r = runs[cell][0]
        ax.plot([s + 0.5 for s in r["seconds"]], r["responses"], color=color(cell),
                marker=MARKERS.get(r["model"], "o"), ms=3, label=cell)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("responses in that second")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return _save(fig, out, name)


def fig10(results, rows, out):
    name = "fig10_seed001_avg_responses"
    runs = _seed001(results, rows)
    if not runs:
        return placeholder(out, name, "no seed001 runs")
    cells = an.seed001_order(runs)
    fig, axes = _fig(6.5, 4)
    ax = axes[0][0]
    cis = [stats.mean_ci95([r["throughput"] for r in runs[c] if r["throughput"]]) for c in cells]
    ax.bar(range(len(cells)), [c.mean for c in cis], yerr=[c.half_width for c in cis],
           color=[color(c) for c in cells], capsize=4)
    for i, c in enumerate(cis):
        ax.annotate(f"{c.mean:.1f}", (i, c.mean), ha="center", va="bottom", fontsize=9)
    ax.set_xticks(range(len(cells)), cells)
    ax.set_ylabel("responses per second (served / completion, 95% CI)")
    ax.grid(alpha=0.3, axis="y")
    return _save(fig, out, name)


def fig11(results, rows, out):
    name = "fig11_seed001_percentiles"
    runs = _seed001(results, rows)
    if not runs:
        return placeholder(out, name, "no seed001 runs")
    cells = an.seed001_order(runs)
    fig, axes = _fig(7, 4)
    ax = axes[0][0]
    w = 0.26
    for i, p in enumerate((50, 90, 95)):
        vals = []
        for c in cells:
            per_rep = [stats.percentile(r["latencies"], p) for r in runs[c] if r["latencies"]]
            vals.append(stats.mean_ci95(per_rep) if per_rep else stats.MeanCI(0, 0, 0, 0))
        ax.bar([j + (i - 1) * w for j in range(len(cells))], [v.mean / 1000 for v in vals], w,
               yerr=[v.half_width / 1000 for v in vals], capsize=3, label=f"p{p}",
               color=plt.cm.plasma(0.15 + 0.3 * i))
    ax.set_xticks(range(len(cells)), cells)
    ax.set_ylabel("response time (s, 95% CI over repetitions)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    return _save(fig, out, name)


# ---- seed 002, seed 000 ---------------------------------------------------------------------

def fig12(results, rows, out):
    name = "fig12_seed002_histograms"
    data = an.seed002_samples(results, rows)
    data = {n: d for n, d in data.items() if d["vote"]}
    if not data:
        return placeholder(out, name, "no seed002 runs")
    ns = sorted(data)
    fig, axes = _fig(4.2 * len(ns), 3.8, ncols=len(ns), sharex=True)
    hi = max(stats.percentile(d["vote"], 99.5) for d in data.values())
    lo = min(min(d["first"] or d["vote"]) for d in data.values())
    bins = [lo + (hi - lo) * i / 50 for i in range(51)]
    for ax, n in zip(axes[0], ns):
        d = data[n]
        j = stats.jitter(d["vote"])
        ax.hist(d["vote"], bins=bins, color="#1f77b4", alpha=0.7,
                label="all replies (vote)" if n > 1 else "round trip")
        if n > 1:
            ax.hist(d["first"], bins=bins, color="#ff7f0e", alpha=0.5, label="first reply")
        ax.axvline(j.mean, color="k", lw=1)
        ax.axvline(j.mean + 2 * j.stddev, color="k", lw=0.8, ls=":")
        ax.set_title(f"{n} server{'s' if n > 1 else ''}: mean {j.mean:.2f}, sd {j.stddev:.2f} ms",
                     fontsize=9)
        ax.set_xlabel("round trip (ms)")
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("requests")
    return _save(fig, out, name)


def fig13(results, rows, out):
    name = "fig13_seed002_series"
    data = {n: s for n, s in an.seed002_series(results, rows).items() if s}
    if not data:
        return placeholder(out, name, "no seed002 runs")
    fig, axes = _fig(8, 3.8)
    ax = axes[0][0]
    for i, n in enumerate(sorted(data)):
        ax.plot(range(len(data[n])), data[n], lw=0.6, alpha=0.8, label=f"{n} server{'s' if n > 1 else ''}",
                color=plt.cm.viridis(i / max(1, len(data) - 1) * 0.8))
    ax.set_xlabel("request index (repetition 1)")
    ax.set_ylabel("round trip, all replies (ms)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return _save(fig, out, name)


def fig14(results, rows, out):
    name = "fig14_seed000_series"
    data = an.seed000_series(results, rows)
    if not data:
        return placeholder(out, name, "no seed000 runs")
    cases = sorted(data)
    fig, axes = _fig(4.4 * len(cases), 3.8, ncols=len(cases))
    for ax, (clients, replicas) in zip(axes[0], cases):
        for mode, c in (("spawn", "#d62728"), ("pool", "#1f77b4")):
            s = data[(clients, replicas)].get(mode)
            if not s:
                continue
            ax.plot(range(len(s)), s, lw=0.4, alpha=0.25, color=c)
            w = max(5, len(s) // 40)
            ax.plot(range(len(s)), stats.rolling_mean([x for x in s if not math.isnan(x)], w)[:len(s)],
                    lw=1.6, color=c,
                    label=("thread per request" if mode == "spawn" else "thread pool") + f" (mean of {w})")
        ax.set_title(f"{clients} client{'s' if clients > 1 else ''}, {replicas} replica{'s' if replicas > 1 else ''}",
                     fontsize=9)
        ax.set_xlabel("request index")
        ax.set_ylabel("round trip (ms, mean over repetitions)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return _save(fig, out, name)


def fig15(results, rows, out):
    name = "fig15_memory_vs_threads"
    data = an.memory_points(results, rows)
    if not data:
        return placeholder(out, name, "no memory runs")
    fig, axes = _fig(10, 4, ncols=2)
    for model, pts in data.items():
        pts = [p for p in pts if p["rss_mb"]]
        axes[0][0].errorbar([p["threads"] for p in pts], [p["rss_mb"].mean for p in pts],
                            yerr=[p["rss_mb"].half_width for p in pts], marker=MARKERS.get(model, "o"),
                            color=color(model), capsize=3, label=f"{model}: resident")
        axes[0][1].plot([p["connections"] for p in pts], [p["vsz_mb"] for p in pts],
                        marker=MARKERS.get(model, "o"), color=color(model), label=f"{model}: virtual")
        axes[0][1].plot([p["connections"] for p in pts], [p["rss_mb"].mean for p in pts], ls=":",
                        marker=MARKERS.get(model, "o"), color=color(model), label=f"{model}: resident")
    axes[0][0].set_xlabel("server threads (/proc)")
    axes[0][0].set_ylabel("resident memory (MiB)")
    axes[0][0].set_title("resident set vs threads")
    axes[0][1].set_xlabel("idle persistent connections")
    axes[0][1].set_ylabel("MiB")
    axes[0][1].set_yscale("log")
    axes[0][1].set_title("process size vs connections")
    for ax in axes[0]:
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    return _save(fig, out, name)


def fig16(rows, out):
    name = "fig16_cpu_per_request"
    data = [b for b in an.bottleneck(rows) + an.bottleneck(rows, floor=True)
            if b["server_ms"] and b["pg_ms"]]
    if not data:
        return placeholder(out, name, "no scaling runs with CPU accounting")
    fig, axes = _fig(8, 4.2)
    ax = axes[0][0]
    models = [b["model"] for b in data]
    bottom = [0.0] * len(data)
    for part, c, label in (("server_ms", "#1f77b4", "exchange server (or exchange-floor)"),
                           ("pg_ms", "#2ca02c", "PostgreSQL"), ("client_ms", "#c7c7c7", "bench client")):
        vals = [(b[part].mean * 1000 if b[part] else 0) for b in data]
        ax.bar(range(len(data)), vals, 0.6, bottom=bottom, color=c, label=label)
        bottom = [x + y for x, y in zip(bottom, vals)]
    for i, b in enumerate(data):
        ax.annotate(f"{b['clients']} cl.\n{b['throughput'].mean:.0f}/s", (i, bottom[i]),
                    ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(data)), [m.replace(" (", "\n(") for m in models], fontsize=8)
    ax.set_ylabel("CPU µs per request (whole run)")
    ax.set_title(f"at each model's best throughput, {data[0]['cores']} core(s)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    ax.set_ylim(0, max(bottom) * 1.25 if max(bottom) else 1)
    return _save(fig, out, name)


def fig17(results, rows, out):
    """scripts/takeover_bench.py's results (takeover.json): every kill-to-served time by kind on
    a log scale, and the cost rounds' throughput in the order they ran."""
    name = "fig17_takeover"
    d = an.load_takeover(results)
    if not d:
        return placeholder(out, name, f"no {an.TAKEOVER_FILE} (scripts/takeover_bench.py --json)")
    cost = d.get("cost")
    fig, axes = _fig(10, 4.2, ncols=2 if cost else 1)
    ax = axes[0][0]
    kinds = [("restart\n(kill -9)", d.get("restarts_s"), "#7f7f7f"),
             ("standby takes\nover (kill -9)", d.get("takeovers_s"), "#1f77b4"),
             (f"paused leader\n(lease {d.get('lease_ms', 0) / 1000:g} s)", d.get("pauses_s"), "#ff7f0e")]
    kinds = [k for k in kinds if k[1]]
    for i, (label, xs, c) in enumerate(kinds):
        ms = sorted(x * 1000 for x in xs)
        jitter = [i + 0.18 * ((j % 7) - 3) / 3 for j in range(len(ms))]
        ax.scatter(jitter, ms, s=14, color=c, alpha=0.75, zorder=3)
        med = an.median_of(ms)
        ax.hlines(med, i - 0.3, i + 0.3, color="black", lw=1.6, zorder=4)
        ax.annotate(f"median {med:,.0f} ms\n(n={len(ms)})", (i + 0.32, med), fontsize=7, va="center")
    ax.set_yscale("log")
    ax.set_xticks(range(len(kinds)), [k[0] for k in kinds], fontsize=8)
    ax.set_xlim(-0.5, len(kinds) - 0.2)
    ax.set_ylabel("kill (or SIGSTOP) to the first answered request, ms")
    ax.set_title(f"{d.get('orders', 0):,} resting orders, {d.get('clients', '?')} clients", fontsize=9)
    ax.grid(alpha=0.3, axis="y", which="both")
    if cost:
        ax = axes[0][1]
        rs = cost["rounds"]
        xs = list(range(1, len(rs) + 1))
        ax.bar(xs, [r["throughput"] for r in rs],
               color=["#1f77b4" if r["standby"] else "#c7c7c7" for r in rs])
        for x, a, b in zip(xs[1:], rs, rs[1:]):  # where one set of rounds ends and the next begins
            if a.get("set") != b.get("set"):
                ax.axvline(x - 0.5, color="black", ls=":", lw=1)
        for label, key, c in (("alone", "alone_median", "#7f7f7f"), ("with a standby", "standby_median", "#1f77b4")):
            ax.axhline(cost[key], color=c, ls="--", lw=1.2, label=f"median {label}: {cost[key]:,.0f}/s")
        pooled = an.pooled_cost(d)
        sets = f", {pooled['n']} pairs in {pooled['sets']} sets" if pooled["sets"] > 1 else ""
        ax.set_xlabel("round, in the order run (grey: alone, blue: with a standby)")
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.set_ylabel("requests/s")
        ax.set_title(f"the standby's cost ({cost['clients']} persistent clients):\nwith/alone "
                     f"{pooled['median']:.2f} per pair (median{sets})", fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
        ax.grid(alpha=0.3, axis="y")
    return _save(fig, out, name)


def fig18(rows, out):
    """Per connection kind, each TLS leg's paired TLS/plaintext throughput ratios per model:
    the median as a bar, the least and the most as its error bar."""
    name = "fig18_security"
    legs = [x for x in an.security_legs(rows) if x["ratios"]]
    if not legs:
        return placeholder(out, name, "no security runs with both a TLS and a plaintext leg")
    conns = list(dict.fromkeys(x["connections"] for x in legs))
    by_conn = {c: list(dict.fromkeys(x["leg"].label for x in legs if x["connections"] == c)) for c in conns}
    widths = [len(by_conn[c]) + 0.5 for c in conns]
    fig, axes = _fig(1.5 + 1.6 * sum(widths), 4.2, ncols=len(conns), gridspec_kw={"width_ratios": widths})
    for ax, conn in zip(axes[0], conns):
        xs = [x for x in legs if x["connections"] == conn]
        models = list(dict.fromkeys(x["model"] for x in xs))
        labels = by_conn[conn]
        width = 0.8 / len(models)
        for j, model in enumerate(models):
            pts = [(labels.index(x["leg"].label), x["ratios"]) for x in xs if x["model"] == model]
            meds = [an.median_of(r) for _, r in pts]
            err = [[m - min(r) for m, (_, r) in zip(meds, pts)], [max(r) - m for m, (_, r) in zip(meds, pts)]]
            ax.bar([i + (j - (len(models) - 1) / 2) * width for i, _ in pts], meds, width, yerr=err,
                   capsize=3, color=color(model), label=model)
        ax.axhline(1.0, color="black", lw=0.8, ls="--")
        ax.set_xlim(-0.75, len(labels) - 0.25)
        ax.set_xticks(range(len(labels)), [lb.replace(", ", ",\n") for lb in labels], fontsize=8)
        ax.set_ylabel("TLS / plaintext requests/s")
        ax.set_title(f"{conn} ({xs[0]['clients']} clients)", fontsize=9)
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=8)
    return _save(fig, out, name)


def make_all(results: Path, figures: Path, failures: list[str] | None = None) -> dict[str, Path]:
    results, figures = Path(results), Path(figures)
    figures.mkdir(parents=True, exist_ok=True)
    rows = an.load_runs(results)
    made = {}
    plain = {"fig01": fig01, "fig02": fig02, "fig03": fig03, "fig04": fig04, "fig05": fig05,
             "fig06": fig06, "fig16": fig16, "fig18": fig18}
    with_raw = {"fig07": fig07, "fig08": fig08, "fig09": fig09, "fig10": fig10, "fig11": fig11,
                "fig12": fig12, "fig13": fig13, "fig14": fig14, "fig15": fig15, "fig17": fig17}
    for name in FIGURES:
        key = name[:5]
        try:
            if key in plain:
                made[name] = plain[key](rows, figures)
            else:
                made[name] = with_raw[key](results, rows, figures)
        except Exception as e:  # a broken figure must not hide the others; say why on it
            print(f"ERROR: {name}: {type(e).__name__}: {e}", flush=True)
            if failures is not None:
                failures.append(name)
            plt.close("all")
            made[name] = placeholder(figures, name, f"plotting failed: {type(e).__name__}: {e}")
    return made


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m study.plots RESULTS_DIR FIGURES_DIR")
    failed: list[str] = []
    for n, p in make_all(Path(sys.argv[1]), Path(sys.argv[2]), failed).items():
        print(p)
    sys.exit(1 if failed else 0)
