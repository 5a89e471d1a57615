#!/usr/bin/env bash
# CTest check of the study pipeline: runs `writeup/make_report.sh --quick` (every experiment,
# seconds per cell, 2 repetitions, and a small scripts/takeover_bench.py) and asserts that its
# CSV, manifest, takeover.json, every figure and the report exist and make sense, and that the
# durable floor (exchange-floor) was measured in every scaling cell (or listed as skipped when
# the binary is missing), that section 3.10 shows the security legs' TLS/plaintext ratios, that
# section 4.1 shows the standby's cost per set and pooled, and that "What changed since the last
# run" follows the key findings.
# Exit 0 pass, 1 fail, 77 "SKIPPED: reason" only when the study's Python packages cannot be
# installed.
#
# Database: $EXCHANGE_TEST_DATABASE_URL (set by test.sh) if present: the study then uses
# databases writeup_quick, writeup_quick_r1.. on that cluster; otherwise make_report.sh starts
# its own private cluster (.local/writeup-pg-quick, port 25601).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

OUT=writeup/cache/quick
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

if [[ -n "${EXCHANGE_TEST_DATABASE_URL:-}" && -z "${WRITEUP_DATABASE_URL:-}" ]]; then
  export WRITEUP_DATABASE_URL=$EXCHANGE_TEST_DATABASE_URL
  export WRITEUP_DB_PREFIX=writeup_quick
fi

rm -rf "$OUT"
start=$SECONDS
rc=0
writeup/make_report.sh --quick || rc=$?
if [[ $rc -eq 77 ]]; then
  echo "SKIPPED: writeup/make_report.sh --quick could not install its Python tools"
  exit 77
fi
[[ $rc -eq 0 ]] || fail "writeup/make_report.sh --quick exited with $rc"
echo "quick study took $((SECONDS - start)) s"

PYTHON=.local/writeup-venv/bin/python
PYTHONPATH=writeup "$PYTHON" - "$OUT" <<'PY' || exit 1
import csv, json, re, sys
from pathlib import Path
from study import experiments, plots
from study.sweep import COLUMNS

out = Path(sys.argv[1])
problems = []
runs = out / "results" / "runs.csv"
rows = list(csv.DictReader(open(runs, newline=""))) if runs.exists() else []
if not rows:
    problems.append(f"{runs}: missing or empty")
else:
    header = list(rows[0].keys())
    if header != COLUMNS:
        problems.append(f"{runs}: columns differ from study.sweep.COLUMNS")
    for col in ("git_commit", "nproc", "cpu_model", "kernel", "mem_gib"):
        empty = [r for r in rows if not r[col]]
        if empty:
            problems.append(f"{runs}: {len(empty)} row(s) without {col}")
manifest = json.loads((out / "results" / "manifest.json").read_text())
skipped = manifest.get("skipped", [])
by_exp = {}
for r in rows:
    by_exp.setdefault(r["experiment"], []).append(r)
for exp in experiments.EXPERIMENTS:
    ok = [r for r in by_exp.get(exp, []) if r["status"] == "ok"]
    fully_skipped = any(s.startswith(exp + ":") for s in skipped) and not by_exp.get(exp)
    if not ok and not fully_skipped:
        problems.append(f"experiment {exp}: no successful run")
failed = [r for r in rows if r["status"] != "ok"]
for r in failed:
    print(f"failed run: {r['experiment']} {r['cell']} rep {r['rep']}: {r['note']}")
if rows and len(failed) > max(1, len(rows) // 10):
    problems.append(f"{len(failed)} of {len(rows)} runs failed")
scaling_reps = {}
for r in by_exp.get("scaling", []):
    scaling_reps.setdefault(r["cell"], set()).add(r["rep"])
if any(len(v) < 2 for v in scaling_reps.values()):
    problems.append("scaling: a cell has fewer than 2 repetitions")
# The durable floor: measured in every scaling (clients, cores) cell when exchange-floor is
# built (manifest floor_models), else skipped with a warning.
floor = [r for r in by_exp.get("scaling", []) if r.get("system") == "floor" and r["status"] == "ok"]
if manifest.get("floor_models"):
    cells = {(r["clients"], r["cores"]) for r in by_exp.get("scaling", []) if r.get("system") == "server"}
    missing = cells - {(r["clients"], r["cores"]) for r in floor}
    if missing:
        problems.append(f"scaling: no durable-floor run in cell(s) {sorted(missing)}")
elif not any(s.startswith("scaling:") and "floor" in s for s in skipped):
    problems.append("scaling: the floor was neither measured nor listed as skipped")
for name in plots.FIGURES:
    p = out / "figures" / f"{name}.png"
    if not p.exists() or p.read_bytes()[:8] != b"\x89PNG\r\n\x1a\n":
        problems.append(f"{p}: missing or not a PNG")
pdf = out / "report.pdf"
if not pdf.exists() or pdf.read_bytes()[:5] != b"%PDF-" or pdf.stat().st_size < 20000:
    problems.append(f"{pdf}: missing or not a PDF")
md = out / "report.md"
text = md.read_text() if md.exists() else ""
for name in plots.FIGURES:
    if f"{name}.png" not in text:
        problems.append(f"{md}: does not show {name}")
if floor and "of the floor" not in text:
    problems.append(f"{md}: does not compare the models with the durable floor")
# Section 3.10, the cost of security: TLS/plaintext ratios in its table, and the resumed legs
# did resume their sessions.
security = [r for r in by_exp.get("security", []) if r["status"] == "ok"]
if security:
    if "### 3.10 The cost of security" not in text or not re.search(r"\| \*\*\d+\.\d\d\*\* \(", text):
        problems.append(f"{md}: section 3.10 shows no TLS/plaintext ratio")
    unresumed = sorted({r["cell"] for r in security
                        if r["cell"].endswith("-resumed") and not int(r["tls_resumed"] or 0)})
    if unresumed:
        problems.append(f"security: no resumed TLS handshake in {unresumed}")
# Section 4.1: scripts/takeover_bench.py's results, written by make_report.sh.
takeover = out / "results" / "takeover.json"
if not takeover.exists():
    problems.append(f"{takeover}: missing (make_report.sh runs scripts/takeover_bench.py)")
else:
    t = json.loads(takeover.read_text())
    if not t.get("takeovers_s") or not t.get("restarts_s") or not t.get("cost", {}).get("rounds"):
        problems.append(f"{takeover}: no takeovers, restarts or cost rounds")
    if not t.get("checks_passed"):
        problems.append(f"{takeover}: its end-of-run check failed (acknowledged orders or conservation)")
    if "takeover by the standby" not in text or "What the standby costs" not in text:
        problems.append(f"{md}: section 4.1 does not show the takeover and cost figures")
    sets = t.get("cost", {}).get("sets") or []
    if not sets or any(r.get("set") not in {s["set"] for s in sets} for r in t["cost"]["rounds"]):
        problems.append(f"{takeover}: the cost rounds are not kept by set")
    if not re.search(r"\| \*\*pooled\*\* \| \d+ sets? \|", text):
        problems.append(f"{md}: section 4.1 has no table of the standby's cost sets and pooled pairs")
# The key findings are followed by what changed since the last run (here: nothing saved).
if "## What changed since the last run" not in text:
    problems.append(f"{md}: no 'What changed since the last run' after the key findings")
for p in problems:
    print("FAIL:", p)
print(f"checked {len(rows)} runs ({len(failed)} failed), {len(plots.FIGURES)} figures, report.md/pdf; "
      f"skipped: {'; '.join(skipped) or 'nothing'}")
sys.exit(1 if problems else 0)
PY
echo "ok: quick sweep, CSV, every figure and the report are there"
