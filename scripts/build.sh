#!/usr/bin/env bash
# Configure and build the project: scripts/build.sh [BUILD_DIR] [extra cmake args...]
#
# One place for the build command so run.sh, test.sh (CI) and docker/Dockerfile
# build the same way. BUILD_DIR defaults to "build"; extra arguments go to the
# configure step (e.g. -DEXCHANGE_SANITIZER=thread). EXCHANGE_BUILD_TARGETS limits what is
# built.
set -euo pipefail

# Work from the repository root whatever the caller's directory, so relative
# BUILD_DIRs always mean the same place.
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build_dir=${1:-build}
if [[ $# -gt 0 ]]; then shift; fi
extra=("$@")

configure=(cmake -S . -B "$build_dir")

# RelWithDebInfo: optimised (the numbers we measure) but with symbols for
# backtraces and perf. A caller's own -DCMAKE_BUILD_TYPE wins.
if ! printf '%s\n' "${extra[@]}" | grep -q '^-DCMAKE_BUILD_TYPE='; then
  configure+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
fi

# Ninja rebuilds faster than make, but a build dir that is already configured
# keeps its generator (CMake refuses to switch it).
if [[ ! -f "$build_dir/CMakeCache.txt" && -z "${CMAKE_GENERATOR:-}" ]] && command -v ninja >/dev/null; then
  configure+=(-G Ninja)
fi

"${configure[@]}" "${extra[@]}"
# EXCHANGE_BUILD_TARGETS="exchange-server exchange-client" builds only those (run.sh: what
# serving needs, not the test programs).
targets=()
for t in ${EXCHANGE_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j"$(nproc)" "${targets[@]}"
