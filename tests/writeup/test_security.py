"""The security experiment without a server: its plan (legs alternating within each
repetition, the flags each leg needs), the paired TLS/plaintext ratios, and the report's
section with and without security rows."""
import pytest

from study import analysis, experiments, report


def plan(models=("per-client", "reactor")):
    ctx = experiments.Context(models=["reactor", "per-client", "pool"], nproc=2)
    cfg = {"models": list(models), "connections": {"persistent": 8, "oneshot": 4}, "duration": 1, "warmup": 0}
    return experiments.security(cfg, 2, ctx), ctx


def test_legs_alternate_within_each_repetition():
    runs, ctx = plan(["reactor"])
    cells = [(r.cell, r.rep) for r in runs]
    assert cells[:4] == [("reactor-persistent-plain", 1), ("reactor-persistent-tls", 1),
                         ("reactor-persistent-tls", 2), ("reactor-persistent-plain", 2)]
    oneshot = [r.cell.removeprefix("reactor-oneshot-") for r in runs[4:]]
    assert oneshot == ["plain", "tls-full", "tls13-resumed", "tls12-resumed"] + \
        ["tls12-resumed", "tls13-resumed", "tls-full", "plain"]
    assert not ctx.skipped


def test_every_leg_authenticates_and_names_its_tls_settings():
    runs, _ = plan()
    assert {r.params["model"] for r in runs} == {"per-client", "reactor"} and len(runs) == 2 * 6 * 2
    for r in runs:
        assert "principals" in r.needs_flags and r.servers[0].args == []
        leg = r.security
        assert r.params["transport"] == leg.transport and r.params["tls_version"] == leg.tls_version
    tls12 = next(r for r in runs if r.cell.endswith("tls12-resumed"))
    assert "tls-max-version" in tls12.needs_client_flags and tls12.params["resumption"] == "on"
    plain = next(r for r in runs if r.cell.endswith("-plain"))
    assert plain.security.tls_flags is None and plain.params["resumption"] == ""


def row(cell, rep, thr, model="reactor"):
    return {"experiment": "security", "status": "ok", "system": "server", "model": model, "cell": cell,
            "rep": rep, "clients": 4, "throughput_rps": thr, "lat_p50_ms": 1.0, "lat_p99_ms": 2.0,
            "total_requests": 1000, "server_cpu_s": 0.1, "pg_cpu_s": 0.05, "client_cpu_s": 0.02}


def test_ratios_pair_the_same_repetition_only():
    plain = [row("reactor-oneshot-plain", 1, 100.0), row("reactor-oneshot-plain", 2, 200.0)]
    tls = [row("reactor-oneshot-tls-full", 2, 50.0), row("reactor-oneshot-tls-full", 1, 20.0),
           row("reactor-oneshot-tls-full", 3, 99.0)]  # repetition 3 has no plaintext run
    assert analysis.paired_ratios(tls, plain) == pytest.approx([0.2, 0.25])
    legs = analysis.security_legs(plain + tls)
    assert [x["leg"].name for x in legs] == ["plain", "tls-full"]
    assert legs[0]["ratios"] is None and legs[1]["cpu_us"]["server"].mean == pytest.approx(100.0)


def test_section_renders_with_and_without_security_rows(tmp_path):
    empty = report.Report(tmp_path, tmp_path / "figures", tmp_path / "report.md").build()
    assert "### 3.10 The cost of security" in empty and "No data" in empty
    rep = report.Report(tmp_path, tmp_path / "figures", tmp_path / "report.md")
    rep.rows = [row("reactor-persistent-plain", r, 100.0) for r in (1, 2, 3)] + \
               [row("reactor-persistent-tls", r, t) for r, t in ((1, 70.0), (2, 90.0), (3, 80.0))]
    text = rep.build()
    assert "**0.80** (0.70–0.90, n=3)" in text and "0.80 reactor" in text
