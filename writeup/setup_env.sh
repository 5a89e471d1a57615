#!/usr/bin/env bash
# Create (once) and update the study's Python venv: .local/writeup-venv with
# writeup/requirements.txt. Prints the venv's python on stdout (last line).
#
#   writeup/setup_env.sh            # idempotent; reinstalls only when requirements change
#   WRITEUP_PYTHON=python3.11 ...   # another interpreter (default: python3)
#
# Exit 77 with "SKIPPED: reason" on stderr when no venv can be made or the packages
# cannot be installed (no network): callers that are tests turn that into a skip.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

VENV=.local/writeup-venv
REQ=writeup/requirements.txt
PY=${WRITEUP_PYTHON:-python3}

skip() {
  echo "SKIPPED: $*" >&2
  exit 77
}

mkdir -p .local
exec 9>"$VENV.lock" # one setup at a time (CI and a developer, or two tests)
flock 9

if [[ ! -x "$VENV/bin/python" ]]; then
  rm -rf "$VENV"
  if ! "$PY" -m venv "$VENV" >/dev/null 2>&1; then
    rm -rf "$VENV"
    # Debian's python3 needs python3-venv for ensurepip; install it if we may.
    if command -v apt-get >/dev/null && [[ $EUID -eq 0 ]]; then
      echo "setup_env: installing python3-venv" >&2
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-venv >&2 ||
        skip "cannot install python3-venv"
      "$PY" -m venv "$VENV" >&2 || { rm -rf "$VENV"; skip "cannot create a venv with $PY"; }
    else
      skip "cannot create a venv with $PY (install python3-venv)"
    fi
  fi
fi

stamp="$VENV/.requirements.sha256"
want=$(sha256sum "$REQ" | cut -d' ' -f1)
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
  echo "setup_env: installing $REQ into $VENV" >&2
  "$VENV/bin/python" -m pip install --disable-pip-version-check -q -r "$REQ" >&2 ||
    skip "pip could not install $REQ (no network?)"
  echo "$want" >"$stamp"
fi
echo "$PWD/$VENV/bin/python"
