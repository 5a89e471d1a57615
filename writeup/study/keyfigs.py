"""The study's key figures: each a number with its interval, and when, at which commit and by
what it was measured.

key_figures() computes them from a results directory. The report's "What changed since the
last run", the generated block of docs/PERFORMANCE.md (study/perfblock.py) and
results/previous_key_figures.json all take them from here, so no figure is computed twice.

    python -m study.keyfigs save-previous RESULTS   # the figures of RESULTS, before a rerun replaces them
"""
from __future__ import annotations

import argparse
import datetime
import json
from pathlib import Path

from . import analysis as an
from . import stats
from .fmt import cores_text

PREVIOUS_FILE = "previous_key_figures.json"


def figure(fid: str, label: str, value: float, text: str, measured: dict, section: str) -> dict:
    return {"id": fid, "label": label, "value": value, "text": text, "date": measured["date"],
            "commit": measured["commit"], "section": section}


def ci_text(c: stats.MeanCI | None, d: int = 0, unit: str = "") -> str:
    """'20,976 ± 1,687 requests/s (95% CI, n=5)'."""
    if c is None:
        return "—"
    if c.n < 2:
        return f"{c.mean:,.{d}f}{unit} (n=1)"
    return f"{c.mean:,.{d}f} ± {c.half_width:,.{d}f}{unit} (95% CI, n={c.n})"


def spread_text(xs: list[float], d: int = 2, unit: str = "") -> str:
    """'0.57 (0.53–0.62, n=5)': the median, the least and the most."""
    return f"{an.median_of(xs):.{d}f}{unit} ({min(xs):.{d}f}–{max(xs):.{d}f}{unit}, n={len(xs)})"


def cell_rows(rows: list[dict], cores: int, clients: int, system: str | None = None) -> list[dict]:
    return [r for r in rows if r["experiment"] == "scaling" and r["status"] == "ok"
            and r["cores"] == cores and r["clients"] == clients
            and (system is None or r.get("system") == system)]


# ---- the main sweep ------------------------------------------------------------------------

def throughput_figures(rows: list[dict]) -> list[dict]:
    curves, floor = an.scaling_curves(rows), an.scaling_curves(rows, floor=True)
    if not curves:
        return []
    k = max(curves)
    cmax = max(p[0] for pts in curves[k].values() for p in pts)
    at = {m: ci for m, pts in curves[k].items() for c, ci, _ in pts if c == cmax}
    best = max(at, key=lambda m: at[m].mean)
    when = an.when_measured(cell_rows(rows, k, cmax))
    out = [figure("throughput_best", f"the best model's throughput ({best}), {cmax} persistent "
                  f"clients, {cores_text(k)}", at[best].mean, ci_text(at[best], 0, " requests/s"), when, "3.1")]
    for fm, pts in sorted(floor.get(k, {}).items())[:1]:
        c = next((ci for cl, ci, _ in pts if cl == cmax), None)
        if c:
            out.append(figure("floor_throughput", f"the durable floor's throughput ({fm}), same cell",
                              c.mean, ci_text(c, 0, " requests/s"), when, "3.1"))
    return out


def floor_figures(rows: list[dict]) -> list[dict]:
    """The best model's share of the floor per core count (every repetition's paired ratio)
    and its p99 against the floor's."""
    out = []
    for s in an.floor_summary(rows):
        k, c, m = s["cores"], s["clients"], s["model"]
        when = {"date": s["date"], "commit": s["commit"]}
        if s["pairs"]:
            out.append(figure(
                f"floor_share_{k}core", f"the best model's share of the durable floor ({m}), {c} "
                f"persistent clients, {cores_text(k)}: each repetition's run over its floor run "
                "(median, least–most, n), and the ratio of the means",
                an.median_of(s["pairs"]), f"{spread_text(s['pairs'])}; ratio of the means "
                f"{s['share']:.2f} ± {s['half_width']:.2f}", when, "3.1"))
        if s["p99"] and s["floor_p99"]:
            out.append(figure(f"floor_p99_{k}core", f"p99 of {m} against the floor's, same cell",
                              s["p99"].mean, f"{ci_text(s['p99'], 1, ' ms')} against "
                              f"{ci_text(s['floor_p99'], 1, ' ms')}", when, "3.1"))
    return out


def cpu_figures(rows: list[dict]) -> list[dict]:
    b = an.bottleneck(rows)
    if not b:
        return []
    top = max(b, key=lambda x: x["throughput"].mean)
    parts = [top[k] for k in ("server_ms", "pg_ms", "client_ms")]
    if not all(parts):
        return []
    us = [stats.MeanCI(c.n, c.mean * 1000, c.stddev * 1000, c.half_width * 1000) for c in parts]
    text = ", ".join(f"{name} {c.mean:.0f} ± {c.half_width:.0f}"
                     for name, c in zip(("server", "PostgreSQL", "client"), us))
    when = an.when_measured(cell_rows(rows, top["cores"], top["clients"], "server"))
    return [figure("cpu_per_request", f"CPU per request at the best cell ({top['model']}, "
                   f"{top['clients']} clients, {cores_text(top['cores'])}): server, PostgreSQL, client",
                   sum(c.mean for c in us), f"{text} µs (95% CI, n={us[0].n})", when, "3.9")]


def memory_figures(results: Path, rows: list[dict]) -> list[dict]:
    pc = [p for p in an.memory_points(results, rows).get("per-client", []) if p["rss_mb"]]
    c = stats.slope_ci95([p["threads"] for p in pc], [p["rss_mb"].mean * 1024 for p in pc])
    if c is None:
        return []
    when = an.when_measured([r for r in an.ok_rows(rows, "memory") if r["model"] == "per-client"])
    return [figure("memory_per_thread", "resident memory per thread, thread per client (least "
                   "squares over the idle-session counts)", c.mean,
                   f"{c.mean:.1f} ± {c.half_width:.1f} KiB (95% CI, n={c.n} points)", when, "3.8")]


def security_figures(rows: list[dict]) -> list[dict]:
    out = []
    for x in an.security_legs(rows):
        if not x["ratios"]:
            continue
        cell = [r for r in an.ok_rows(rows, "security")
                if r["cell"].startswith(f"{x['model']}-{x['connections']}-")]
        out.append(figure(f"tls_{x['model']}_{x['connections']}_{x['leg'].name}",
                          f"TLS/plaintext throughput, {x['model']}, {x['connections']} "
                          f"({x['clients']} clients), {x['leg'].label}: paired repetitions",
                          an.median_of(x["ratios"]), spread_text(x["ratios"]),
                          an.when_measured(cell), "3.10"))
    return out


# ---- the hot standby (takeover.json) -------------------------------------------------------

def takeover_when(d: dict) -> dict:
    return {"date": d.get("date", "?"), "commit": an.short_commit(d.get("machine", {}).get("git_commit"))}


def takeover_figures(d: dict | None) -> list[dict]:
    if not d:
        return []
    when = takeover_when(d)
    out = []
    for fid, key, label in (
            ("restart_ms", "restarts_ms", "plain restart: kill -9 to the first answered request"),
            ("takeover_ms", "takeovers_ms", "takeover by a hot standby: kill -9 to the first answered request"),
            ("pause_ms", "pauses_ms", "paused leader (SIGSTOP) until the standby serves"),
            ("standby_part_ms", "server_side_ms", "the standby's own part: writer lock to serving")):
        x = d.get(key)
        if x:
            out.append(figure(fid, f"{label} ({d.get('orders', 0):,} resting orders)", x["median"],
                              f"{x['median']:,.0f} ms median ({x['min']:,.0f}–{x['max']:,.0f} ms, "
                              f"n={x['n']})", when, "4.1"))
    p = an.pooled_cost(d)
    if p:
        sets = an.cost_sets(d)
        days = sorted({(s.get("started_at") or d.get("date") or "?")[:10] for s in sets})
        out.append(figure("standby_cost", "throughput with a standby following over alone, "
                          "each with-round over its alone neighbours, every set pooled",
                          p["median"], f"{p['median']:.2f} median ({p['min']:.2f}–{p['max']:.2f}, "
                          f"n={p['n']} pairs in {p['sets']} set{'s' if p['sets'] > 1 else ''})",
                          {"date": " to ".join(dict.fromkeys([days[0], days[-1]])),
                           "commit": when["commit"]}, "4.1"))
    return out


def cost_set_table(d: dict | None) -> list[str]:
    """Section 4.1's table of the standby's cost: every set and the pooled pairs."""
    sets = an.cost_sets(d)
    if not sets:
        return []
    c, p = d["cost"], an.pooled_cost(d)
    lines = ["| set | when | alone, median | with a standby, median | ratio of the medians | "
             "per pair, median | pairs: least–most (n) |", "|---|---|---|---|---|---|---|"]
    for s in sets:
        pairs = an.set_pairs(s)
        when = ", ".join(filter(None, [s.get("when"), (s.get("started_at") or "")[:16].replace("T", " ")]))
        when = when if s.get("when") else f"the run's only set (before `--cost-sets`), {when}"
        lines.append(f"| {s['set']} | {when} | {s['alone_median']:,.0f}/s | "
                     f"{s['standby_median']:,.0f}/s | {s['ratio_of_medians']:.2f} | "
                     f"{s['median_pair_ratio']:.2f} | {min(pairs):.2f}–{max(pairs):.2f} ({len(pairs)}) |")
    lines.append(f"| **pooled** | {p['sets']} set{'s' if p['sets'] > 1 else ''} | "
                 f"{c['alone_median']:,.0f}/s | {c['standby_median']:,.0f}/s | "
                 f"{c['ratio_of_medians']:.2f} | **{p['median']:.2f}** | "
                 f"{p['min']:.2f}–{p['max']:.2f} ({p['n']}) |")
    return lines


# ---- all of them ---------------------------------------------------------------------------

def key_figures(results: Path, rows: list[dict] | None = None) -> dict[str, dict]:
    """id -> figure (id, label, value, text, date, commit, section), in the report's order,
    from RESULTS (its runs.csv unless `rows` are given, and takeover.json)."""
    results = Path(results)
    rows = an.load_runs(results) if rows is None else rows
    figs = (throughput_figures(rows) + floor_figures(rows) + cpu_figures(rows)
            + memory_figures(results, rows) + security_figures(rows)
            + takeover_figures(an.load_takeover(results)))
    return {f["id"]: f for f in figs}


def save_previous(results: Path) -> Path | None:
    """Writes RESULTS/previous_key_figures.json with the key figures of RESULTS as they are
    (before a rerun replaces them); None, and nothing written, when there are none."""
    figs = key_figures(results)
    if not figs:
        return None
    path = Path(results) / PREVIOUS_FILE
    saved = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    path.write_text(json.dumps({"saved_at": saved, "figures": figs}, indent=1, ensure_ascii=False) + "\n",
                    encoding="utf-8")
    return path


def load_previous(results: Path) -> dict | None:
    p = Path(results) / PREVIOUS_FILE
    return json.loads(p.read_text(encoding="utf-8")) if p.exists() else None


def measured_text(f: dict) -> str:
    return f"{f['date']}, `{f['commit']}`"


def change_text(old: dict, new: dict) -> str:
    if (old["text"], old["date"], old["commit"]) == (new["text"], new["date"], new["commit"]):
        return "unchanged: the same runs"
    if not old["value"]:
        return "changed"
    return f"{100 * (new['value'] - old['value']) / abs(old['value']):+.0f}%"


def what_changed(current: dict[str, dict], previous: dict | None) -> list[str]:
    """Markdown list: each key figure of the previous data set → this one's."""
    if not previous:
        return [f"- Nothing to compare with: no `{PREVIOUS_FILE}` in these results (the full run "
                "and `--only … --replace` save the key figures of the results they replace)."]
    old = previous.get("figures", {})
    lines = []
    if all(old.get(k) == v for k, v in current.items()) and old.keys() == current.keys():
        lines.append(f"- The previous key figures (saved {previous.get('saved_at', '?')}) are "
                     "those of these same results: nothing has been measured again since.")
    for fid in list(current) + [k for k in old if k not in current]:
        o, n = old.get(fid), current.get(fid)
        if o and n:
            lines.append(f"- {n['label']}: {o['text']} ({measured_text(o)}) → **{n['text']}** "
                         f"({measured_text(n)}): {change_text(o, n)}.")
        elif n:
            lines.append(f"- {n['label']}: not measured before → **{n['text']}** ({measured_text(n)}).")
        else:
            lines.append(f"- {o['label']}: {o['text']} ({measured_text(o)}) → not in these results.")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["save-previous"])
    ap.add_argument("results")
    a = ap.parse_args(argv)
    path = save_previous(Path(a.results))
    print(path or f"{a.results}: no key figures to save")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
