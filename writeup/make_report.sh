#!/usr/bin/env bash
# One command for the whole study: measure, plot, write the report.
#
#   writeup/make_report.sh                 full sweep (about 56 min on 2 cores) -> writeup/results/,
#                                          writeup/figures/, writeup/report.md, writeup/report.pdf
#   writeup/make_report.sh --quick         tiny version of everything (CI, about 2 min) -> writeup/cache/quick/
#   writeup/make_report.sh --plots-only    figures and report from the existing results (no runs)
#   writeup/make_report.sh --resume        continue an interrupted sweep (keeps runs.csv, skips done runs)
#   writeup/make_report.sh --only seed002,memory [--reps 3]   a subset (rows are appended with --resume)
#   writeup/make_report.sh --only scaling --replace [--reps 3]   rerun a subset: its old rows are set
#                                          aside (writeup/cache/old-results/), the others are kept
#
# Needs: the built binaries (build/bin/exchange-server, exchange-client; built here with
# scripts/build.sh if missing; build/bin/exchange-floor, the durable floor, is measured beside
# the models in the scaling experiment if present, skipped with a warning if not; override
# with $EXCHANGE_SERVER_BIN, $EXCHANGE_CLIENT_BIN, $EXCHANGE_FLOOR_BIN), PostgreSQL 15
# (scripts/install-deps.sh), python3 with venv.
# PostgreSQL: $WRITEUP_DATABASE_URL if set (the study creates databases PREFIX, PREFIX_r1..r4
# and PREFIX_floor there; PREFIX = $WRITEUP_DB_PREFIX, default writeup), else a private cluster
# started here with scripts/local-pg.sh in .local/writeup-pg (port $WRITEUP_PG_PORT, default
# 25600; --quick: .local/writeup-pg-quick, port 25601) and stopped again at the end.
#
# Exit status: 0 done; 77 with "SKIPPED: reason" when the Python tools cannot be installed;
# anything else is a failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

quick=0 plots_only=0 resume=0 replace=0 only="" reps=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) quick=1 ;;
    --plots-only) plots_only=1 ;;
    --resume) resume=1 ;;
    --replace) replace=1 ;;
    --only) only=$2; shift ;;
    --reps) reps=$2; shift ;;
    -h | --help) sed -n '2,25s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "make_report: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done

if [[ $quick -eq 1 ]]; then
  OUT=writeup/cache/quick
  RESULTS=$OUT/results
  FIGURES=$OUT/figures
  REPORT_MD=$OUT/report.md
  REPORT_PDF=$OUT/report.pdf
  LOGS=$OUT/logs
  PG_DIR=.local/writeup-pg-quick
  PG_PORT=${WRITEUP_PG_PORT:-25601}
else
  RESULTS=writeup/results
  FIGURES=writeup/figures
  REPORT_MD=writeup/report.md
  REPORT_PDF=writeup/report.pdf
  LOGS=writeup/cache/logs
  PG_DIR=.local/writeup-pg
  PG_PORT=${WRITEUP_PG_PORT:-25600}
fi

say() { printf '\n== make_report: %s\n' "$*"; }
t_start=$SECONDS

say "Python tools (.local/writeup-venv)"
rc=0
PYTHON=$(writeup/setup_env.sh | tail -n 1) || rc=$?
if [[ $rc -eq 77 ]]; then
  echo "SKIPPED: the study's Python packages cannot be installed (see above)"
  exit 77
elif [[ $rc -ne 0 ]]; then
  exit "$rc"
fi
export PYTHONPATH="$ROOT/writeup${PYTHONPATH:+:$PYTHONPATH}"

# The key figures of the results a measuring run replaces, saved for the report's "What changed
# since the last run" (study/keyfigs.py). Not --quick, not --resume (an interrupted run resumed
# keeps the figures saved when it began); only results a finished sweep left (manifest.json).
if [[ $quick -eq 0 && $plots_only -eq 0 && $resume -eq 0 && -f "$RESULTS/manifest.json" ]]; then
  say "key figures of the results this run replaces -> $RESULTS/previous_key_figures.json"
  "$PYTHON" -m study.keyfigs save-previous "$RESULTS"
fi

pg_started=0
cleanup() {
  if [[ $pg_started -eq 1 ]]; then
    scripts/local-pg.sh stop "$PG_DIR" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

if [[ $plots_only -eq 0 ]]; then
  SERVER_BIN=${EXCHANGE_SERVER_BIN:-$ROOT/build/bin/exchange-server}
  CLIENT_BIN=${EXCHANGE_CLIENT_BIN:-$ROOT/build/bin/exchange-client}
  FLOOR_BIN=${EXCHANGE_FLOOR_BIN:-$ROOT/build/bin/exchange-floor}
  if [[ ! -x "$SERVER_BIN" || ! -x "$CLIENT_BIN" ]]; then
    say "building (binaries missing)"
    scripts/install-deps.sh
    scripts/build.sh build
  fi
  command -v taskset >/dev/null || { echo "make_report: taskset (util-linux) is missing" >&2; exit 1; }

  if [[ -n "${WRITEUP_DATABASE_URL:-}" ]]; then
    DB_URL=$WRITEUP_DATABASE_URL
    say "PostgreSQL: using \$WRITEUP_DATABASE_URL"
  else
    say "PostgreSQL: private cluster $PG_DIR on port $PG_PORT"
    if ! scripts/local-pg.sh status "$PG_DIR" >/dev/null 2>&1; then
      pg_started=1
    fi
    DB_URL=$(scripts/local-pg.sh start "$PG_DIR" "$PG_PORT" | tail -n 1)
  fi

  # "takeover" (section 4.1: scripts/takeover_bench.py) is not a sweep experiment: it runs
  # here, after the sweep, and the sweep gets the other names.
  takeover=1
  sweep_only=$only
  if [[ -n "$only" ]]; then
    [[ ",$only," == *,takeover,* ]] || takeover=0
    sweep_only=$(tr ',' '\n' <<<"$only" | { grep -vx takeover || true; } | paste -sd, -)
  fi
  if [[ -z "$only" || -n "$sweep_only" ]]; then
    say "sweep ($([[ $quick -eq 1 ]] && echo quick || echo full)) -> $RESULTS"
    args=(--db "$DB_URL" --out "$RESULTS" --logs "$LOGS" --db-prefix "${WRITEUP_DB_PREFIX:-writeup}"
          --server-bin "$SERVER_BIN" --client-bin "$CLIENT_BIN" --floor-bin "$FLOOR_BIN")
    [[ $quick -eq 1 ]] && args+=(--quick)
    [[ $resume -eq 1 ]] && args+=(--resume)
    [[ $replace -eq 1 ]] && args+=(--replace)
    [[ -n "$sweep_only" ]] && args+=(--only "$sweep_only")
    [[ -n "$reps" ]] && args+=(--reps "$reps")
    "$PYTHON" -m study.sweep "${args[@]}"
  fi
  if [[ $takeover -eq 1 && $resume -eq 1 && -f "$RESULTS/takeover.json" ]]; then
    say "takeover: $RESULTS/takeover.json is there (--resume keeps it)"
  elif [[ $takeover -eq 1 ]]; then
    # Its own database (it empties it), named after the sweep's.
    tdb="${WRITEUP_DB_PREFIX:-writeup}_takeover"
    psql "$DB_URL" -X -q -v ON_ERROR_STOP=1 -tAc "SELECT 1 FROM pg_database WHERE datname = '$tdb'" \
      | grep -q 1 || psql "$DB_URL" -X -q -v ON_ERROR_STOP=1 -c "CREATE DATABASE $tdb"
    tdb_url=$("$PYTHON" -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(path="/" + sys.argv[2])))' "$DB_URL" "$tdb")
    targs=(--db "$tdb_url" --server-bin "$SERVER_BIN" --client-bin "$CLIENT_BIN" --json "$RESULTS/takeover.json")
    # --quick: a small book, a few kills, one short cost round each way (tens of seconds).
    # Full: its defaults, the standby's cost in 3 sets of 5 + 5 rounds (one before the book).
    [[ $quick -eq 1 ]] && targs+=(--orders 20000 --restarts 2 --takeovers 3 --pauses 1 --lease-ms 1000
                                  --load-seconds 0.5 --cost-rounds 1 --cost-sets 1 --cost-seconds 2)
    say "takeover -> $RESULTS/takeover.json (scripts/takeover_bench.py; log: $LOGS/takeover.log)"
    mkdir -p "$LOGS"
    python3 scripts/takeover_bench.py "${targs[@]}" >"$LOGS/takeover.log" 2>&1 \
      || { tail -n 20 "$LOGS/takeover.log" >&2; echo "make_report: scripts/takeover_bench.py failed (log: $LOGS/takeover.log)" >&2; exit 1; }
    tail -n 5 "$LOGS/takeover.log"
  fi
fi

[[ -f "$RESULTS/runs.csv" ]] || { echo "make_report: no $RESULTS/runs.csv: run the sweep first" >&2; exit 1; }

say "figures -> $FIGURES"
"$PYTHON" -m study.plots "$RESULTS" "$FIGURES" >/dev/null

say "report -> $REPORT_MD, $REPORT_PDF"
"$PYTHON" -m study.report "$RESULTS" "$FIGURES" "$REPORT_MD" --pdf "$REPORT_PDF" >/dev/null

# The figures docs/PERFORMANCE.md shares with the report, in its generated block (from
# writeup/results only: never the --quick ones).
if [[ $quick -eq 0 ]]; then
  say "the study's figures -> docs/PERFORMANCE.md (its generated block)"
  "$PYTHON" -m study.perfblock "$RESULTS" docs/PERFORMANCE.md >/dev/null
fi

say "done in $((SECONDS - t_start)) s: $REPORT_PDF"
