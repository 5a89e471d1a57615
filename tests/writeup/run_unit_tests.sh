#!/usr/bin/env bash
# CTest entry for the study's statistics tests (pytest, tests/writeup/test_*.py), in the
# study's venv (writeup/setup_env.sh). Exit 77 "SKIPPED: reason" if the venv cannot be made.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
rc=0
PYTHON=$(writeup/setup_env.sh | tail -n 1) || rc=$?
if [[ $rc -eq 77 ]]; then
  echo "SKIPPED: the study's Python packages cannot be installed"
  exit 77
fi
[[ $rc -eq 0 ]] || exit "$rc"
exec "$PYTHON" -m pytest -q -p no:cacheprovider tests/writeup "$@"
