#!/usr/bin/env python3
"""Every relative markdown link in the documentation leads somewhere: the file exists and, when
the link names an anchor, the file has a heading with that GitHub-style anchor.

    tests/ops/check_doc_links.py [ROOT]

Reads README.md, docs/*.md and docs/notes/*.md under ROOT (default: the checkout this script is
in), takes every inline link `[text](target)` outside fenced code blocks and inline code, and
checks each target that is not a URL (http:, https:, mailto:): its path relative to the file
(empty: the file itself) must exist, and an anchor `#name` must be one of the target file's
heading anchors, made as GitHub makes them (lower case; every character but letters, digits,
spaces, hyphens and underscores dropped; spaces to hyphens; a repeated anchor gets -1, -2, ...).
Anchors are checked only in markdown targets. Prints every broken link with its file and line
and exits 1 if there is any.
"""
import glob
import os
import re
import sys

LINK = re.compile(r"(?<!!)\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def strip_code(line):
    """The line with inline code spans blanked out (their text stays for headings' anchors)."""
    return re.sub(r"`[^`]*`", lambda m: " " * len(m.group(0)), line)


def lines_outside_fences(path):
    with open(path, encoding="utf-8") as f:
        fenced = False
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if not fenced:
                yield number, line.rstrip("\n")


def slug(text):
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link's text, not its target
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML tags
    text = text.replace("`", "").replace("*", "").lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


_anchors = {}


def anchors(path):
    if path not in _anchors:
        seen, found = {}, set()
        for _, line in lines_outside_fences(path):
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        for m in re.finditer(r"<a\s+(?:name|id)=\"([^\"]+)\"", open(path, encoding="utf-8").read()):
            found.add(m.group(1))
        _anchors[path] = found
    return _anchors[path]


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    files = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md"))) \
        + sorted(glob.glob(os.path.join(root, "docs", "notes", "*.md")))
    broken, checked = [], 0
    for path in files:
        if not os.path.exists(path):
            continue
        for number, line in lines_outside_fences(path):
            for m in LINK.finditer(strip_code(line)):
                target = m.group(2)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                    continue
                checked += 1
                file_part, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
                where = f"{os.path.relpath(path, root)}:{number}: ({target})"
                if not os.path.exists(dest):
                    broken.append(f"{where} no file {os.path.relpath(dest, root)}")
                elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                    broken.append(f"{where} no heading with anchor #{anchor} in {os.path.relpath(dest, root)}")
    for b in broken:
        print(b)
    print(f"checked {checked} links in {len(files)} files: {len(broken)} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
