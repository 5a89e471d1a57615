"""The standby's cost in several sets (scripts/takeover_bench.py's cost_result, an old one-set
takeover.json still loading), the floor's paired ratios, the key figures and "What changed
since the last run" (study/keyfigs.py), without a server."""
import importlib.util
import json
import os
from argparse import Namespace

import pytest

from study import analysis, keyfigs, report

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "takeover_bench.py")
spec = importlib.util.spec_from_file_location("takeover_bench", SCRIPT)
tb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tb)


def rnd(cost_set, n, standby, thr):
    r = {"set": cost_set, "round": n, "standby": standby, "poll_ms": None, "throughput": thr,
         "p99_ms": 5.0, "errors": 0, "active_cpu_us_per_request": 30.0, "active_cpu_share": 0.6,
         "load1": 1.0}
    if standby:
        r.update({"standby_cpu_s": 0.5, "standby_cpu_share": 0.1, "standby_entries": 1000,
                  "standby_cpu_us_per_entry": 5.0, "standby_pg_cpu_s": 0.1,
                  "standby_pg_cpu_us_per_entry": 1.0, "standby_lag_entries": 0, "standby_lag_ms": 10.0})
    return r


def one_set(cost_set, alone, with_):
    """Alternating rounds: alone[0], with_[0], alone[1], with_[1], ..."""
    out = []
    for i, (a, w) in enumerate(zip(alone, with_)):
        out += [rnd(cost_set, 2 * i + 1, False, a), rnd(cost_set, 2 * i + 2, True, w)]
    return out


ARGS = Namespace(standby_poll_ms=None, cost_seconds=8, cost_clients=64)
SET1 = one_set(1, [100.0, 100.0], [90.0, 80.0])     # pairs 0.90 (100, 100), 0.80 (100 only)
SET2 = one_set(2, [200.0, 100.0], [150.0, 100.0])   # pairs 150/150 = 1.00, 100/100 = 1.00


def multi_set_takeover():
    cost = tb.cost_result(ARGS, [(SET1, "2026-12-01T10:00:00+00:00", "before the book and the kills"),
                                 (SET2, "2026-12-01T10:20:00+00:00", "after the pauses")])
    return {"date": "2026-12-01", "machine": {"git_commit": "abcdef0123"}, "orders": 1000,
            "restarts_s": [1.0, 1.2], "takeovers_s": [0.05, 0.07, 0.06], "pauses_s": [4.5],
            "takeover_server_ms": [[2, 1, 0]], "checks_passed": True, "acknowledged": 10,
            "cost": cost}


def test_pairs_stay_within_their_set_and_every_set_is_kept():
    cost = multi_set_takeover()["cost"]
    assert [s["pair_ratios"] for s in cost["sets"]] == [pytest.approx([0.9, 0.8]), pytest.approx([1.0, 1.0])]
    # Pooled: the same four pairs; the last with-round of set 1 is not paired with set 2's first.
    assert cost["pair_ratios"] == pytest.approx([0.9, 0.8, 1.0, 1.0])
    assert cost["median_pair_ratio"] == pytest.approx(0.95)
    assert [s["when"] for s in cost["sets"]] == ["before the book and the kills", "after the pauses"]
    assert len(cost["rounds"]) == 8 and cost["sets"][1]["set"] == 2


def test_pooled_cost_over_sets(tmp_path):
    (tmp_path / "takeover.json").write_text(json.dumps(multi_set_takeover()))
    d = analysis.load_takeover(tmp_path)
    p = analysis.pooled_cost(d)
    assert (p["n"], p["sets"], p["min"], p["max"]) == (4, 2, pytest.approx(0.8), pytest.approx(1.0))
    table = keyfigs.cost_set_table(d)
    assert len(table) == 2 + 2 + 1 and table[-1].startswith("| **pooled** | 2 sets |")
    assert "| 0.80–1.00 (4) |" in table[-1]


def test_an_old_one_set_takeover_json_still_loads(tmp_path):
    old = tb.cost_figures([{k: v for k, v in r.items() if k != "set"} for r in SET1], None)
    old.update({"rounds": SET1, "seconds": 8, "clients": 64})
    d = dict(multi_set_takeover(), cost=old, started_at="2026-11-25T07:52:20+00:00")
    (tmp_path / "takeover.json").write_text(json.dumps(d))
    loaded = analysis.load_takeover(tmp_path)
    sets = analysis.cost_sets(loaded)
    assert len(sets) == 1 and sets[0]["pair_ratios"] == pytest.approx([0.9, 0.8])
    assert sets[0]["started_at"].startswith("2026-11-25")
    assert analysis.pooled_cost(loaded)["n"] == 2
    text = report.Report(tmp_path, tmp_path / "figures", tmp_path / "report.md").build()
    assert "| **pooled** | 1 set |" in text and "median of 2 pairs of rounds from 1 set" in text


def test_report_shows_every_set_and_the_pooled_pairs(tmp_path):
    (tmp_path / "takeover.json").write_text(json.dumps(multi_set_takeover()))
    text = report.Report(tmp_path, tmp_path / "figures", tmp_path / "report.md").build()
    assert "| 1 | before the book and the kills, 2026-12-01 10:00 |" in text
    assert "| 2 | after the pauses, 2026-12-01 10:20 |" in text
    assert "**0.95** of its persistent-load throughput (median of 4 pairs of rounds from 2 sets" in text


def scaling_row(system, model, rep, thr, cores=2, clients=64):
    return {"experiment": "scaling", "status": "ok", "system": system, "model": model, "rep": rep,
            "clients": clients, "cores": cores, "throughput_rps": thr, "lat_p99_ms": 4.0,
            "cell": f"{model}-c{clients}-k{cores}", "started_at": "2026-12-01T09:00:00Z",
            "git_commit": "0123456789abcdef"}


def test_floor_ratio_pairs_each_repetition_with_its_own_floor_run():
    rows = [scaling_row("server", "reactor", 1, 50.0), scaling_row("server", "reactor", 2, 90.0),
            scaling_row("floor", "reactor", 2, 100.0), scaling_row("floor", "reactor", 1, 100.0),
            scaling_row("server", "reactor", 3, 70.0)]  # repetition 3 has no floor run
    assert analysis.floor_pairs(rows, 2, 64, "reactor", "reactor") == pytest.approx([0.5, 0.9])
    (s,) = analysis.floor_summary(rows)
    assert (s["model"], s["clients"], s["date"], s["commit"]) == ("reactor", 64, "2026-12-01", "0123456")
    f = {x["id"]: x for x in keyfigs.floor_figures(rows)}["floor_share_2core"]
    assert f["value"] == pytest.approx(0.7) and f["text"].startswith("0.70 (0.50–0.90, n=2); ratio of the means")


def test_what_changed_without_with_and_against_the_same_results(tmp_path):
    (tmp_path / "takeover.json").write_text(json.dumps(multi_set_takeover()))
    now = keyfigs.key_figures(tmp_path)
    assert list(now) == ["restart_ms", "takeover_ms", "pause_ms", "standby_part_ms", "standby_cost"]
    assert "Nothing to compare with" in keyfigs.what_changed(now, None)[0]
    assert keyfigs.save_previous(tmp_path) == tmp_path / keyfigs.PREVIOUS_FILE
    prev = keyfigs.load_previous(tmp_path)
    same = keyfigs.what_changed(now, prev)
    assert "those of these same results" in same[0] and same[2].endswith("unchanged: the same runs.")
    prev["figures"]["takeover_ms"].update(value=120.0, text="120 ms median", date="2026-11-25")
    prev["figures"]["gone"] = dict(prev["figures"]["pause_ms"], id="gone", label="an old figure")
    lines = keyfigs.what_changed(now, prev)
    took = next(x for x in lines if x.startswith("- takeover by a hot standby"))
    assert "120 ms median (2026-11-25, `abcdef0`) → **60 ms median (50–70 ms, n=3)**" in took
    assert took.endswith(": -50%.") and lines[-1].startswith("- an old figure:")
    assert lines[-1].endswith("→ not in these results.")


def test_report_says_what_changed_and_why(tmp_path):
    text = report.Report(tmp_path, tmp_path / "figures", tmp_path / "report.md").build()
    head = text.split("## 1. Method")[0]
    assert "## What changed since the last run" in head and "Nothing to compare with" in head
    assert "the hot standby" in head and "2026-11-23" in head
