#!/usr/bin/env bash
# Install the Debian packages needed to build, test and run the exchange.
#
# Used by run.sh, test.sh (and so CI) and docker/Dockerfile, so a fresh machine,
# CI and the image all get the same toolchain from one list. Idempotent: it asks
# dpkg what is missing first and only then touches apt, so a warm machine pays
# nothing and prints a single line.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build g++ pkg-config
  # libraries the server and client link against
  libpqxx-dev libpq-dev libpugixml-dev
  libboost-thread-dev libboost-system-dev libboost-program-options-dev
  # TLS on the exchange port and the clients; openssl makes the certificates of the tests
  libssl-dev openssl
  # the serving binaries' allocator (server/CMakeLists.txt says why)
  libjemalloc-dev
  # unit-test framework
  catch2
  # libFuzzer targets (tests/fuzz) and clang-format
  clang libclang-rt-14-dev clang-format
  # the private PostgreSQL cluster of run.sh / test.sh (scripts/local-pg.sh)
  postgresql-15 postgresql-client-15
  # writeup tooling and tests/docker/check_docker.sh (venvs)
  python3 python3-pip python3-venv
  # runuser, flock, setarch (util-linux); pgrep, ps (procps) used by scripts and tests
  util-linux procps
)

missing=()
for pkg in "${packages[@]}"; do
  # dpkg-query exits non-zero for packages it has never heard of; that is "missing" too.
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  if [[ "$status" != "install ok installed" ]]; then
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

# Only root may install; elsewhere go through sudo (a developer's own machine).
sudo_cmd=()
if [[ $EUID -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi

echo "install-deps: installing ${missing[*]}"
# Noninteractive so tzdata/postgresql-common never stop at a prompt (CI has no stdin).
# The lock timeout waits for another apt run (e.g. unattended-upgrades) instead of failing.
export DEBIAN_FRONTEND=noninteractive
apt_opts=(-y -q -o DPkg::Lock::Timeout=300)
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" update
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get "${apt_opts[@]}" install --no-install-recommends "${missing[@]}"
echo "install-deps: done"
