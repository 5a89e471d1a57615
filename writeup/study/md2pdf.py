"""A small Markdown -> PDF renderer (reportlab), for the subset report.md uses.

Why not pandoc + LaTeX: on Debian 12 that is ~80 MB to download and ~360 MB installed
(pandoc, texlive-latex-base/-recommended, fonts) for every CI machine; reportlab is one pip
wheel. The subset: # headings (1-3), paragraphs, **bold**, *italic*, `code`, [text](url),
- and 1. lists (one level), pipe tables (first row = header), ![caption](image.png) on a line
of its own, ``` code blocks ```, --- rules and <!-- pagebreak -->. The fonts are the DejaVu
TTFs that matplotlib ships, so µ, ±, λ, ≈, → print.

    python -m study.md2pdf report.md report.pdf
"""
from __future__ import annotations

import html
import re
import sys
from pathlib import Path

import matplotlib
from reportlab.lib import colors
from reportlab.lib.enums import TA_CENTER
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
from reportlab.lib.units import cm
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFont
from reportlab.platypus import (Image, KeepTogether, ListFlowable, ListItem, PageBreak, Paragraph,
                                Preformatted, SimpleDocTemplate, Spacer, Table, TableStyle)

FONT_DIR = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
_fonts_ready = False


def _register_fonts() -> tuple[str, str]:
    global _fonts_ready
    if not _fonts_ready:
        try:
            pdfmetrics.registerFont(TTFont("DejaVu", str(FONT_DIR / "DejaVuSans.ttf")))
            pdfmetrics.registerFont(TTFont("DejaVu-Bold", str(FONT_DIR / "DejaVuSans-Bold.ttf")))
            pdfmetrics.registerFont(TTFont("DejaVu-Oblique", str(FONT_DIR / "DejaVuSans-Oblique.ttf")))
            pdfmetrics.registerFont(TTFont("DejaVu-BoldOblique",
                                           str(FONT_DIR / "DejaVuSans-BoldOblique.ttf")))
            pdfmetrics.registerFont(TTFont("DejaVuMono", str(FONT_DIR / "DejaVuSansMono.ttf")))
            pdfmetrics.registerFontFamily("DejaVu", normal="DejaVu", bold="DejaVu-Bold",
                                          italic="DejaVu-Oblique", boldItalic="DejaVu-BoldOblique")
            _fonts_ready = True
        except Exception:  # noqa: BLE001 - fall back to the built-in fonts
            return "Helvetica", "Courier"
    return "DejaVu", "DejaVuMono"


def styles():
    body, mono = _register_fonts()
    ss = getSampleStyleSheet()
    base = ParagraphStyle("body", parent=ss["BodyText"], fontName=body, fontSize=9.5, leading=13,
                          spaceAfter=5)
    return {
        "body": base,
        "h1": ParagraphStyle("h1", parent=base, fontSize=17, leading=21, spaceBefore=10,
                             spaceAfter=8, fontName=body + ("-Bold" if body == "DejaVu" else "")),
        "h2": ParagraphStyle("h2", parent=base, fontSize=13.5, leading=17, spaceBefore=10,
                             spaceAfter=5, fontName=body + ("-Bold" if body == "DejaVu" else "")),
        "h3": ParagraphStyle("h3", parent=base, fontSize=11, leading=14, spaceBefore=7,
                             spaceAfter=3, fontName=body + ("-Bold" if body == "DejaVu" else "")),
        "cell": ParagraphStyle("cell", parent=base, fontSize=7.8, leading=9.6, spaceAfter=0),
        "caption": ParagraphStyle("caption", parent=base, fontSize=8.5, leading=11,
                                  alignment=TA_CENTER, textColor=colors.HexColor("#333333")),
        "code": ParagraphStyle("code", parent=base, fontName=mono, fontSize=7.8, leading=9.5,
                               backColor=colors.HexColor("#f4f4f4"), borderPadding=4,
                               spaceBefore=3, spaceAfter=6),
        "mono": mono,
    }


def inline(text: str, mono: str) -> str:
    """Markdown inline markup -> reportlab's paragraph markup."""
    parts = re.split(r"(`[^`]+`)", text)
    out = []
    for p in parts:
        if p.startswith("`") and p.endswith("`") and len(p) >= 2:
            out.append(f'<font face="{mono}">{html.escape(p[1:-1], quote=False)}</font>')
            continue
        p = html.escape(p, quote=False)
        p = re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r'\1 (<font color="#1f4e9a">\2</font>)', p)
        p = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", p)
        p = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"<i>\1</i>", p)
        out.append(p)
    return "".join(out)


def _table(lines: list[str], st, width: float):
    rows = []
    for ln in lines:
        cells = [c.strip() for c in ln.strip().strip("|").split("|")]
        if all(re.fullmatch(r":?-{3,}:?", c) for c in cells if c):
            continue
        rows.append(cells)
    ncol = max(len(r) for r in rows)
    rows = [r + [""] * (ncol - len(r)) for r in rows]
    data = [[Paragraph(("<b>%s</b>" % inline(c, st["mono"])) if i == 0 else inline(c, st["mono"]),
                       st["cell"]) for c in r] for i, r in enumerate(rows)]
    # First column wider when it holds names.
    first = min(0.34, max(0.16, 1.6 / ncol / 2))
    widths = [width * first] + [width * (1 - first) / (ncol - 1)] * (ncol - 1) if ncol > 1 else [width]
    t = Table(data, colWidths=widths, repeatRows=1, hAlign="LEFT")
    t.setStyle(TableStyle([
        ("GRID", (0, 0), (-1, -1), 0.4, colors.HexColor("#999999")),
        ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#e8eef7")),
        ("VALIGN", (0, 0), (-1, -1), "TOP"),
        ("TOPPADDING", (0, 0), (-1, -1), 2), ("BOTTOMPADDING", (0, 0), (-1, -1), 2),
    ]))
    return t


def _image(path: Path, caption: str, st, width: float):
    from reportlab.lib.utils import ImageReader
    if not path.exists():
        return Paragraph(f"[missing figure: {html.escape(str(path))}]", st["body"])
    iw, ih = ImageReader(str(path)).getSize()
    w = min(width, iw * 0.75)
    h = w * ih / iw
    max_h = 15 * cm
    if h > max_h:
        w, h = w * max_h / h, max_h
    return KeepTogether([Image(str(path), width=w, height=h),
                         Paragraph(inline(caption, st["mono"]), st["caption"]), Spacer(1, 6)])


def render(md_path: Path, pdf_path: Path, title: str = "") -> None:
    st = styles()
    md_path, pdf_path = Path(md_path), Path(pdf_path)
    doc = SimpleDocTemplate(str(pdf_path), pagesize=A4, leftMargin=2 * cm, rightMargin=2 * cm,
                            topMargin=1.8 * cm, bottomMargin=1.8 * cm, title=title or md_path.stem,
                            author="exchange study")
    width = A4[0] - 4 * cm
    story = []
    lines = md_path.read_text(encoding="utf-8").splitlines()
    i = 0
    para: list[str] = []

    def flush():
        if para:
            story.append(Paragraph(inline(" ".join(para), st["mono"]), st["body"]))
            para.clear()

    while i < len(lines):
        ln = lines[i]
        s = ln.strip()
        if s.startswith("```"):
            flush()
            j = i + 1
            block = []
            while j < len(lines) and not lines[j].strip().startswith("```"):
                block.append(lines[j])
                j += 1
            story.append(Preformatted("\n".join(block), st["code"]))
            i = j + 1
            continue
        if s == "<!-- pagebreak -->":
            flush()
            story.append(PageBreak())
        elif s.startswith("<!--"):
            flush()
            while i < len(lines) and "-->" not in lines[i]:
                i += 1
        elif m := re.match(r"^(#{1,3})\s+(.*)$", s):
            flush()
            story.append(Paragraph(inline(m.group(2), st["mono"]), st[f"h{len(m.group(1))}"]))
        elif m := re.match(r"^!\[(.*)\]\((.+)\)$", s):
            flush()
            story.append(_image((md_path.parent / m.group(2)).resolve(), m.group(1), st, width))
        elif s.startswith("|"):
            flush()
            block = []
            while i < len(lines) and lines[i].strip().startswith("|"):
                block.append(lines[i])
                i += 1
            story.append(_table(block, st, width))
            story.append(Spacer(1, 6))
            continue
        elif re.match(r"^(-|\*|\d+\.)\s+", s):
            flush()
            items = []
            ordered = bool(re.match(r"^\d+\.", s))
            while i < len(lines) and re.match(r"^(-|\*|\d+\.)\s+", lines[i].strip()):
                text = re.sub(r"^(-|\*|\d+\.)\s+", "", lines[i].strip())
                i += 1
                while i < len(lines) and lines[i].startswith("  ") and lines[i].strip() and \
                        not re.match(r"^(-|\*|\d+\.)\s+", lines[i].strip()):
                    text += " " + lines[i].strip()
                    i += 1
                items.append(ListItem(Paragraph(inline(text, st["mono"]), st["body"]), leftIndent=12))
            story.append(ListFlowable(items, bulletType="1" if ordered else "bullet",
                                      start="1" if ordered else None, leftIndent=14,
                                      bulletFontSize=7 if not ordered else 9))
            continue
        elif s in ("---", "***"):
            flush()
            story.append(Spacer(1, 8))
        elif not s:
            flush()
        else:
            para.append(s)
        i += 1
    flush()

    def footer(canvas, d):
        canvas.saveState()
        canvas.setFont(st["body"].fontName, 7.5)
        canvas.drawRightString(A4[0] - 2 * cm, 1.1 * cm, f"{title or md_path.stem} — page {d.page}")
        canvas.restoreState()

    doc.build(story, onFirstPage=footer, onLaterPages=footer)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: python -m study.md2pdf REPORT.md REPORT.pdf [TITLE]")
    render(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "")
