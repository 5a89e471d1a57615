#!/usr/bin/env python3
"""Every flag a binary's --help lists has a row in docs/OPERATIONS.md, and every row there is a
flag the binary still has.

    tests/ops/check_flags_documented.py --server BIN --floor BIN --client BIN [--doc FILE]

For each of exchange-server, exchange-floor, `exchange-client send` and `exchange-client bench`
it runs `--help` and collects the option names (lines that start with the option, as
boost::program_options prints them: `  --port arg (=12345)`, `  -h [ --help ]`). In the
document it reads the table under the heading that names that binary (`### \`exchange-server\``
and so on, up to the next heading) and collects the backticked `--flag` names of each row's
first cell. It fails naming every flag missing from a table, every row naming a flag the binary
no longer has (stale), a flag listed twice, and a row whose default (second cell) does not start
with the `(=DEFAULT)` that --help shows for that flag.

Hidden options (accepted but left out of --help on purpose) need no row. They are listed in
HIDDEN below with the reason; each is checked to still be accepted (`BIN --flag VALUE --help`
must exit 0), so a hidden flag that is removed is reported too, and one that appears in --help
must then be documented like any other.
"""
import argparse
import os
import re
import subprocess
import sys

# Which --help to read, and the heading of its table in the document.
BINARIES = [
    ("exchange-server", "server", []),
    ("exchange-floor", "floor", []),
    ("exchange-client send", "client", ["send"]),
    ("exchange-client bench", "client", ["bench"]),
]

# Options each binary accepts without listing them in --help: {binary: {flag: (value, why)}}.
# value: what to pass when checking the option still exists (None for a switch).
HIDDEN = {
    "exchange-server": {
        "projector-delay-ms": ("0", "test aid: holds every projection write back N ms "
                                    "(tests/e2e/journal_test.cpp)"),
    },
    "exchange-client send": {
        "file": ("x.xml", "the positional FILE arguments, not a flag to type"),
    },
}

OPTION_LINE = re.compile(r"^ {1,4}(?:-[A-Za-z] \[ )?--([a-z][a-z0-9-]*)(?:\s+arg\s+\(=([^)]*)\))?")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*$")
DOC_FLAG = re.compile(r"`--([a-z][a-z0-9-]*)")


def help_flags(cmd):
    """{option name: its default as --help shows it, or None} (continuation lines are indented
    further, so a flag named inside a description is not taken for an option)."""
    out = subprocess.run(cmd + ["--help"], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        sys.exit(f"check_flags_documented: {' '.join(cmd)} --help exited {out.returncode}: "
                 f"{out.stderr.strip()}")
    flags = {}
    for line in out.stdout.splitlines():
        m = OPTION_LINE.match(line)
        if m:
            flags[m.group(1)] = m.group(2)
    if not flags:
        sys.exit(f"check_flags_documented: found no options in {' '.join(cmd)} --help")
    return flags


def hidden_still_accepted(cmd, flag, value):
    args = cmd + [f"--{flag}"] + ([value] if value is not None else []) + ["--help"]
    return subprocess.run(args, capture_output=True, text=True, timeout=60).returncode == 0


def doc_tables(text):
    """{heading text without backticks: [(line number, [flags of the first cell], second cell)]}."""
    tables = {}
    current = None
    for n, line in enumerate(text.splitlines(), 1):
        m = HEADING.match(line)
        if m:
            current = m.group(1).replace("`", "").strip()
            tables.setdefault(current, [])
            continue
        if current is None or not line.startswith("|"):
            continue
        cells = line.split("|")
        if len(cells) < 3:
            continue
        first = cells[1]
        flags = DOC_FLAG.findall(first)
        if flags:
            tables[current].append((n, flags, cells[2].replace("`", "").strip()))
    return tables


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", required=True, help="exchange-server binary")
    ap.add_argument("--floor", required=True, help="exchange-floor binary")
    ap.add_argument("--client", required=True, help="exchange-client binary")
    ap.add_argument("--doc", default=os.path.normpath(os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "OPERATIONS.md")))
    args = ap.parse_args()
    paths = {"server": args.server, "floor": args.floor, "client": args.client}
    doc = open(args.doc, encoding="utf-8").read()
    tables = doc_tables(doc)

    problems = []
    checked = 0
    for name, binary, sub in BINARIES:
        cmd = [paths[binary]] + sub
        listed = help_flags(cmd)
        hidden = HIDDEN.get(name, {})
        for flag, (value, why) in hidden.items():
            if flag in listed:
                continue  # listed after all: documented like any other below
            if not hidden_still_accepted(cmd, flag, value):
                problems.append(f"{name}: hidden option --{flag} ({why}) is no longer accepted: "
                                f"remove it from HIDDEN in {os.path.basename(__file__)}")
        if name not in tables:
            problems.append(f"{args.doc}: no heading '### `{name}`' with its flag table")
            continue
        rows = tables[name]
        documented = {}
        for line, flags, default in rows:
            if len(flags) == 1 and listed.get(flags[0]) is not None \
                    and not default.startswith(listed[flags[0]]):
                problems.append(f"{args.doc}:{line}: {name}: --{flags[0]} defaults to "
                                f"'{listed[flags[0]]}' (--help), the table says '{default}'")
            for flag in flags:
                if flag in documented:
                    problems.append(f"{args.doc}:{line}: {name}: --{flag} is listed twice (also "
                                    f"line {documented[flag]})")
                documented.setdefault(flag, line)
        for flag in listed:
            checked += 1
            if flag not in documented:
                problems.append(f"{args.doc}: {name}: --{flag} is in --help but has no row "
                                f"in the table under '{name}'")
        for flag, line in documented.items():
            if flag not in listed and flag not in hidden:
                problems.append(f"{args.doc}:{line}: {name}: --{flag} is documented but "
                                f"{' '.join([os.path.basename(cmd[0])] + sub)} --help has no "
                                f"such option (removed or renamed?)")

    for p in problems:
        print(p)
    print(f"check_flags_documented: {checked} flags of {len(BINARIES)} commands checked against "
          f"{args.doc}, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
