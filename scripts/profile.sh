#!/usr/bin/env bash
# Where the time goes in one benchmark case: the per-order CPU budget by thread and backend,
# and perf profiles. scripts/profile.py does the work; see `scripts/profile.sh --help`.
#
#   scripts/profile.sh [--model reactor] [--seconds 8] [--pg-port 26000] [--no-perf] [-- BENCH ARGS...]
exec python3 "$(dirname "${BASH_SOURCE[0]}")/profile.py" "$@"
