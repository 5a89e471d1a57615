"""docs/PERFORMANCE.md's generated block of the study's figures is what writeup/results gives
(study/perfblock.py): the page and the report share one source of numbers."""
from pathlib import Path

import pytest

from study import perfblock

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "PERFORMANCE.md"
RESULTS = ROOT / "writeup" / "results"


def test_performance_md_block_matches_the_results():
    text = DOC.read_text(encoding="utf-8")
    block = perfblock.extract(text)
    assert block is not None, f"{DOC}: no {perfblock.BEGIN} … {perfblock.END} block"
    assert block == perfblock.render(RESULTS), (
        f"{DOC}'s study block differs from {RESULTS}: run writeup/make_report.sh --plots-only "
        f"(or python -m study.perfblock writeup/results docs/PERFORMANCE.md)")


def test_replace_rewrites_only_the_block():
    text = f"before\n{perfblock.BEGIN}\nold\n{perfblock.END}\nafter\n"
    new = perfblock.replace(text, f"{perfblock.BEGIN}\nnew\n{perfblock.END}")
    assert new == f"before\n{perfblock.BEGIN}\nnew\n{perfblock.END}\nafter\n"
    with pytest.raises(ValueError):
        perfblock.replace("no markers", "x")
