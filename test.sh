#!/usr/bin/env bash
# Build everything and run every test: what CI runs (.ci/run) and what a
# developer runs before pushing.
#
#   ./test.sh                 all tests, then the concurrency tests under ThreadSanitizer
#   ./test.sh -R parser       extra arguments go to both ctest runs
#   SKIP_TSAN=1 ./test.sh     skip the ThreadSanitizer build and run (quick local loop)
#   SANITIZE=address ./test.sh  instead: the WHOLE suite against an AddressSanitizer+UBSan build
#   SANITIZE=thread ./test.sh   instead: the WHOLE suite against a ThreadSanitizer build
#                             (build-asan/ or build-tsan/, instrumented server and client)
#   EXCHANGE_TEST_PG_PORT=N   use another port for the test PostgreSQL (default 25432)
#
# Tests get a FRESH private PostgreSQL (.local/test-pg, port 25432) through
# EXCHANGE_TEST_DATABASE_URL, and the binaries under test through
# EXCHANGE_SERVER_BIN / EXCHANGE_CLIENT_BIN. The cluster is stopped on exit,
# also on failure. The last line is a summary: "summary: N passed, N failed, N skipped".
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

PG_DIR=.local/test-pg
PG_PORT=${EXCHANGE_TEST_PG_PORT:-25432} # override when another cluster already uses 25432
LOG_DIR=.local/test-logs

stage="setting up"
pg_started=0
total_passed=0
total_failed=0
total_skipped=0
failed_runs=()

header() { printf '\n== %s\n' "$*"; }

finish() {
  local rc=$?
  if [[ $pg_started -eq 1 ]]; then
    scripts/local-pg.sh stop "$PG_DIR" || true
  fi
  echo
  if [[ "$stage" != finished ]]; then
    # Aborted before the tests could report (a build error, PostgreSQL not
    # starting, ...): say where, and never print a pass count.
    echo "test.sh: FAILED while $stage (exit $rc)"
    exit $((rc == 0 ? 1 : rc))
  fi
  if [[ ${#failed_runs[@]} -gt 0 ]]; then
    echo "test.sh: FAILED: ${failed_runs[*]}"
  fi
  echo "summary: $total_passed passed, $total_failed failed, $total_skipped skipped"
  exit $((${#failed_runs[@]} > 0 ? 1 : 0))
}
trap finish EXIT

# Add up what one ctest run reported, from its log. ctest's closing line is
# "N% tests passed, F tests failed out of T"; T includes tests that skipped
# (exit 77 with SKIP_RETURN_CODE), which it lists as "(Skipped)", but not
# disabled ones, listed as "(Disabled)".
count_results() {
  local log=$1 line total=0 failed=0 skipped disabled
  line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)
  if [[ -n "$line" ]]; then
    total=${line##* out of }
    failed=$(sed -E 's/^.* ([0-9]+) tests? failed.*$/\1/' <<<"$line")
  fi
  skipped=$(grep -cE '^[[:space:]]+[0-9]+ - .* \(Skipped\)$' "$log" || true)
  disabled=$(grep -cE '^[[:space:]]+[0-9]+ - .* \(Disabled\)$' "$log" || true)
  total_passed=$((total_passed + total - failed - skipped))
  total_failed=$((total_failed + failed))
  total_skipped=$((total_skipped + skipped + disabled))
}

# run_ctest NAME COMMAND...: run a ctest command, show its output, keep a copy
# for counting. A failing run is recorded, not fatal, so the other run still happens.
run_ctest() {
  local name=$1 rc=0
  shift
  "$@" 2>&1 | tee "$LOG_DIR/$name.log" || rc=$?
  count_results "$LOG_DIR/$name.log"
  if [[ $rc -ne 0 ]]; then
    failed_runs+=("$name")
  fi
}

stage="installing dependencies"
header "installing dependencies"
scripts/install-deps.sh

SANITIZE=${SANITIZE:-}
case "$SANITIZE" in
  "") BUILD=build ;;
  # The whole suite runs instrumented instead of the separate TSan pass.
  address) BUILD=build-asan SKIP_TSAN=1 ;;
  thread) BUILD=build-tsan SKIP_TSAN=1 ;;
  *) echo "test.sh: SANITIZE must be address or thread" >&2; exit 2 ;;
esac

stage="building"
header "building $BUILD/ (RelWithDebInfo${SANITIZE:+, $SANITIZE sanitizer})"
scripts/build.sh "$BUILD" ${SANITIZE:+-DEXCHANGE_SANITIZER=$SANITIZE}
if [[ "${SKIP_TSAN:-0}" != 1 ]]; then
  header "building build-tsan/ (ThreadSanitizer)"
  scripts/build.sh build-tsan -DEXCHANGE_SANITIZER=thread
fi

stage="starting PostgreSQL"
header "starting PostgreSQL (fresh cluster in $PG_DIR, port $PG_PORT)"
# Fresh every run: tests must not depend on what an earlier run left behind.
scripts/local-pg.sh destroy "$PG_DIR"
pg_started=1
EXCHANGE_TEST_DATABASE_URL=$(scripts/local-pg.sh start "$PG_DIR" "$PG_PORT" | tail -n 1)
export EXCHANGE_TEST_DATABASE_URL
# For the test that restarts PostgreSQL under load (tests/e2e/faults_test.cpp).
export EXCHANGE_TEST_PG_DIR="$PWD/$PG_DIR" EXCHANGE_TEST_PG_PORT="$PG_PORT"
export EXCHANGE_TEST_LOCAL_PG="$PWD/scripts/local-pg.sh"
export EXCHANGE_SERVER_BIN="$PWD/$BUILD/bin/exchange-server"
export EXCHANGE_CLIENT_BIN="$PWD/$BUILD/bin/exchange-client"
echo "EXCHANGE_TEST_DATABASE_URL=$EXCHANGE_TEST_DATABASE_URL"

mkdir -p "$LOG_DIR"

# TSan's fixed memory layout breaks with the high mmap randomisation of some
# kernels ("unexpected memory mapping"); running without ASLR avoids it.
tsan_wrap=()
if [[ "$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 0)" -gt 28 ]]; then
  tsan_wrap=(setarch "$(uname -m)" -R)
fi
# halt_on_error: the first report fails the test instead of being a line in a log.
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1 ${ASAN_OPTIONS:-}"
# A leak inside libpqxx 6.4 on a broken connection is suppressed (see the file for why).
export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp ${LSAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1 ${UBSAN_OPTIONS:-}"
export TSAN_OPTIONS="halt_on_error=1 ${TSAN_OPTIONS:-}"
wrap=()
[[ "$SANITIZE" == thread ]] && wrap=("${tsan_wrap[@]}")

stage="running tests"
header "running tests ($BUILD/)"
# -j1: the end-to-end tests share one PostgreSQL and fixed ports.
# --no-tests=error: a suite that finds no tests is broken, not green.
run_ctest tests "${wrap[@]}" ctest --test-dir "$BUILD" --output-on-failure -j1 --no-tests=error "$@"

if [[ "${SKIP_TSAN:-0}" != 1 ]]; then
  header "running concurrency tests under ThreadSanitizer (build-tsan/)"
  # The server under test is the instrumented one.
  EXCHANGE_SERVER_BIN="$PWD/build-tsan/bin/exchange-server" \
    run_ctest tsan "${tsan_wrap[@]}" ctest --test-dir build-tsan -L concurrency --output-on-failure -j1 "$@"
elif [[ -z "$SANITIZE" ]]; then
  header "skipping ThreadSanitizer run (SKIP_TSAN=1)"
fi

stage=finished
