"""The study's figures in docs/PERFORMANCE.md: one generated block between two markers, so the
page and the report never state the same figure twice by hand.

    python -m study.perfblock RESULTS DOC           # rewrite DOC's block from RESULTS
    python -m study.perfblock RESULTS DOC --check   # exit 1 if DOC's block differs

writeup/make_report.sh runs the first after every full run and --plots-only (not --quick);
tests/writeup/test_performance_block.py is the second.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import analysis as an
from . import keyfigs as kf

BEGIN = "<!-- study-figures:begin -->"
END = "<!-- study-figures:end -->"
NOTE = ("<!-- Generated from writeup/results by writeup/make_report.sh (python -m study.perfblock); "
        "not edited by hand: tests/writeup/test_performance_block.py fails when it differs from "
        "the results. -->")


def figures_table(figs: dict[str, dict]) -> list[str]:
    lines = ["| figure | value (interval) | measured | report |", "|---|---|---|---|"]
    for f in figs.values():
        lines.append(f"| {f['label']} | {f['text']} | {kf.measured_text(f)} | {f['section']} |")
    return lines


def takeover_lines(d: dict | None) -> list[str]:
    if not d:
        return ["The hot standby (report section 4.1): not in these results."]
    c = d.get("cost") or {}
    check = ("all of them stored afterwards, cash and shares conserved" if d.get("checks_passed")
             else "the end-of-run check failed")
    lines = [f"The takeover run ({kf.measured_text(kf.takeover_when(d))}, `scripts/takeover_bench.py` "
             f"from `writeup/make_report.sh`): {d.get('acknowledged', 0):,} orders acknowledged, "
             f"{check}; {d.get('unknown', 0)} requests without a reply, {d.get('refused', 0)} "
             "refused."]
    table = kf.cost_set_table(d)
    if table:
        lines += ["", f"The standby's cost per set of rounds ({c.get('clients', '?')} persistent "
                  f"clients, {c.get('seconds', '?')} s a round, alone and with a standby "
                  "following alternating; a pair is a with-round over the mean of its alone "
                  "neighbours):", ""] + table
    return lines


def render(results: Path) -> str:
    """The block, markers included, from a results directory."""
    figs = kf.key_figures(results)
    rows = an.load_runs(Path(results))
    lines = [BEGIN, NOTE, ""]
    if figs:
        lines += figures_table(figs) + [""]
    else:
        lines += ["No key figures in these results.", ""]
    lines += takeover_lines(an.load_takeover(Path(results))) + [""]
    if not an.ok_rows(rows, "security"):
        lines += ["The cost of security (report section 3.10, TLS against plaintext with the "
                  "study's harness): not in these results.", ""]
    lines.append(END)
    return "\n".join(lines)


def extract(text: str) -> str | None:
    """The block in a document's text, markers included, or None."""
    i, j = text.find(BEGIN), text.find(END)
    if i < 0 or j < i:
        return None
    return text[i:j + len(END)]


def replace(text: str, block: str) -> str:
    old = extract(text)
    if old is None:
        raise ValueError(f"no {BEGIN} … {END} block")
    return text.replace(old, block, 1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results")
    ap.add_argument("doc")
    ap.add_argument("--check", action="store_true", help="exit 1 if the document's block differs")
    a = ap.parse_args(argv)
    doc = Path(a.doc)
    text = doc.read_text(encoding="utf-8")
    block = render(Path(a.results))
    if a.check:
        if extract(text) != block:
            print(f"{doc}: the study's block differs from {a.results} (python -m study.perfblock "
                  f"{a.results} {doc} rewrites it)", file=sys.stderr)
            return 1
        return 0
    new = replace(text, block)
    if new != text:
        doc.write_text(new, encoding="utf-8")
    print(doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
