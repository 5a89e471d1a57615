#!/usr/bin/env bash
# Prints the path of podman-compose $PODMAN_COMPOSE_VERSION in .local/venv-podman-compose,
# installing it there with pip the first time (one install at a time: flock). Exit 1, with
# the reason on stderr, when it cannot be installed.
# Shared by tests/docker/check_docker.sh (`podman-compose config`) and
# tests/docker/run_image.sh (brings the compose stack up), so both use the same version.
# Not Debian's podman-compose 1.0.3: it has no `config` and ignores `profiles:` (a plain
# `up` would start the bench and monitoring services too).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

PODMAN_COMPOSE_VERSION=1.6.0
PC_VENV=.local/venv-podman-compose

mkdir -p .local
exec 9>"$PC_VENV.lock"
flock 9
if [[ ! -x "$PC_VENV/bin/podman-compose" ]]; then
  { python3 -m venv "$PC_VENV" \
    && "$PC_VENV/bin/python" -m pip --disable-pip-version-check -q \
      install "podman-compose==$PODMAN_COMPOSE_VERSION" >&2; } || {
    rm -rf "$PC_VENV"
    echo "podman-compose $PODMAN_COMPOSE_VERSION cannot be installed (pip)" >&2
    exit 1
  }
fi
echo "$PWD/$PC_VENV/bin/podman-compose"
