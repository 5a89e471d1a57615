#!/usr/bin/env bash
# CTest entry for the chaos checker's tests (unittest, tests/chaos/test_*.py): the checker
# (scripts/chaos_check.py) is standard-library Python 3.11, so no venv. Exit 77 "SKIPPED:
# reason" if no such Python is installed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "SKIPPED: the chaos checker needs Python 3.11 or newer ($PYTHON)"
  exit 77
fi
exec "$PYTHON" -m unittest discover -s tests/chaos -t tests/chaos -p 'test_*.py' "$@"
