"""The durable floor in the scaling experiment: planned beside every model when exchange-floor
is there, skipped with a warning when it is not, kept out of the models' statistics, and each
model's share of it."""
import pytest

from study import analysis, experiments, stats


def plan(floor_models):
    ctx = experiments.Context(models=["reactor", "pool"], nproc=2, floor_models=floor_models)
    cfg = {"models": ["reactor", "pool"], "clients": [4, 64], "cores": [1, 2], "duration": 1,
           "warmup": 0, "persistent": True, "pool_threads": 4, "floor_models": ["reactor"]}
    return experiments.scaling(cfg, 2, ctx), ctx


def test_floor_runs_in_every_cell_with_its_own_database():
    runs, ctx = plan(["reactor", "pool"])
    floor = [r for r in runs if r.params["system"] == "floor"]
    assert len(floor) == 2 * 2 * 2            # clients x cores x reps, one floor model
    assert {r.cell for r in floor} >= {"floor-reactor-c64-k1", "floor-reactor-c4-k2"}
    assert all(r.servers[0].binary == "floor" and r.servers[0].db == "writeup_floor" for r in floor)
    server = [r for r in runs if r.params["system"] == "server"]
    assert len(server) == 2 * 2 * 2 * 2 and all(r.servers[0].binary == "server" for r in server)
    # Side by side: each repetition of a cell runs every model and then the floor,
    assert [r.cell for r in runs[:3]] == ["reactor-c4-k1", "pool-c4-k1", "floor-reactor-c4-k1"]
    # ...and both core counts of a repetition before the next repetition.
    assert [(r.cell, r.rep) for r in runs[3:7]] == [("reactor-c4-k2", 1), ("pool-c4-k2", 1),
                                                    ("floor-reactor-c4-k2", 1), ("reactor-c4-k1", 2)]
    assert not ctx.skipped


def test_floor_absent_is_skipped_with_a_warning():
    runs, ctx = plan(None)
    assert all(r.params["system"] == "server" for r in runs)
    assert any(s.startswith("scaling:") and "floor" in s for s in ctx.skipped)


def row(system, model, clients, thr, cores=2):
    return {"experiment": "scaling", "status": "ok", "system": system, "model": model,
            "clients": clients, "cores": cores, "throughput_rps": thr, "cell": f"{model}-c{clients}"}


def test_floor_rows_stay_out_of_the_models_and_shares():
    rows = [row("server", "reactor", 64, t) for t in (800, 1000, 1200)] + \
           [row("floor", "reactor", 64, t) for t in (1900, 2000, 2100)] + \
           [row("", "pool", 64, t) for t in (500, 500, 500)]   # older rows: no system column
    curves = analysis.scaling_curves(rows)
    assert set(curves[2]) == {"reactor", "pool"}
    assert curves[2]["reactor"][0][1].mean == pytest.approx(1000)
    floor = analysis.scaling_curves(rows, floor=True)
    assert set(floor[2]) == {"reactor"} and floor[2]["reactor"][0][1].mean == pytest.approx(2000)
    shares = analysis.share_of_floor(rows)
    clients, r, h, fm = shares[2]["reactor"][0]
    assert (clients, fm) == (64, "reactor") and r == pytest.approx(0.5)
    # pool has no floor of its own: it is held against the reactor floor.
    assert shares[2]["pool"][0][1] == pytest.approx(0.25) and shares[2]["pool"][0][3] == "reactor"
    assert h > 0 and shares[2]["pool"][0][2] == pytest.approx(0.25 * floor[2]["reactor"][0][1].relative)


def test_ratio_ci_adds_relative_half_widths_in_quadrature():
    a, b = stats.MeanCI(3, 30.0, 0.0, 3.0), stats.MeanCI(3, 60.0, 0.0, 8.0)  # 10% and 13.3%
    r, h = analysis.ratio_ci(a, b)
    assert r == pytest.approx(0.5)
    assert h == pytest.approx(0.5 * (0.1 ** 2 + (8 / 60) ** 2) ** 0.5)
    assert analysis.ratio_ci(a, None) is None


def test_replace_sets_aside_only_the_named_experiments(tmp_path):
    import csv
    from study import sweep
    out = tmp_path / "results"
    (out / "raw" / "scaling").mkdir(parents=True)
    (out / "raw" / "scaling" / "x.json").write_text("{}")
    (out / "raw" / "memory").mkdir()
    with open(out / "runs.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(sweep.COLUMNS)
        for exp in ("scaling", "memory", "scaling"):
            w.writerow([exp if c == "experiment" else "ok" if c == "status" else "" for c in sweep.COLUMNS])
    runner = object.__new__(sweep.Runner)
    runner.csv_path, runner.raw, runner.logs = out / "runs.csv", out / "raw", tmp_path / "logs"
    runner._set_aside_experiments(["scaling"])
    kept = list(csv.DictReader(open(out / "runs.csv", newline="")))
    assert [r["experiment"] for r in kept] == ["memory"]
    assert not (out / "raw" / "scaling").exists() and (out / "raw" / "memory").exists()
    old = list((tmp_path / "old-results").iterdir())[0]
    assert len(list(csv.DictReader(open(old / "runs.csv", newline="")))) == 3
    assert (old / "raw" / "scaling" / "x.json").exists()
