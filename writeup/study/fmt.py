"""Formatting and the one comparison rule the report's sections share."""
from __future__ import annotations

import math

from . import stats


def num(x, d=1) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if isinstance(x, (int, float)) and abs(x) >= 10000 and d <= 1:
        return f"{x:,.0f}"
    return f"{x:.{d}f}"


def cis(c: stats.MeanCI | None, d=1) -> str:
    if c is None:
        return "—"
    if c.n < 2:
        return f"{num(c.mean, d)} (n=1)"
    return f"{num(c.mean, d)} ± {num(c.half_width, d)}"


def pct(x, d=2) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.{d}f}%"


def change(new, old) -> str:
    """'+12%' style relative change of new vs old."""
    if not old or new is None or old is None:
        return "—"
    return f"{100 * (new - old) / old:+.0f}%"


def separated(a: stats.MeanCI, b: stats.MeanCI) -> int:
    """+1 if a's 95% interval lies above b's, -1 if below, 0 if they overlap (the rule every
    'agrees / does not agree' below uses: a difference counts only when the intervals do not
    overlap)."""
    if a is None or b is None:
        return 0
    if a.low > b.high:
        return 1
    if a.high < b.low:
        return -1
    return 0


def fig(name: str, figdir: str, caption: str) -> str:
    return f"![Figure {int(name[3:5])}: {caption}]({figdir}/{name}.png)\n"


def cores_text(k: int) -> str:
    return f"{k} core{'s' if k > 1 else ''}"
