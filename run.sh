#!/usr/bin/env bash
# Build and run the exchange server in the foreground on 127.0.0.1:12345 (the
# server's defaults). Extra arguments go to the server, e.g.
#   ./run.sh --concurrency reactor --threads 4
#   ./run.sh --bind 0.0.0.0 --principals FILE [--tls-cert C --tls-key K]
#                                every interface, with authentication (docs/OPERATIONS.md,
#                                "Authentication and TLS"); without --principals a
#                                non-loopback --bind needs --allow-unauthenticated
#
# It builds only what serving needs (exchange-server, exchange-client); ./test.sh
# builds the rest.
#
# Without DATABASE_URL it starts a private PostgreSQL in .local/pg on port 5433
# (scripts/local-pg.sh) and stops it again when the server exits. With
# DATABASE_URL set it uses that database and touches no PostgreSQL.
# Ctrl-C stops the server, then that private PostgreSQL.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

PG_DIR=.local/pg
PG_PORT=5433

stop_pg=0
server_pid=""

# On exit (normal, error or signal): stop the PostgreSQL we started, and only that.
# shellcheck disable=SC2317  # only called from a trap, which shellcheck 0.9 cannot see
cleanup() {
  if [[ $stop_pg -eq 1 ]]; then
    scripts/local-pg.sh stop "$PG_DIR" || true
  fi
}
trap cleanup EXIT

# Ctrl-C / SIGTERM: ask the server to stop with SIGTERM and let the wait below
# collect it, so it finishes in-flight requests before PostgreSQL goes away.
# Always SIGTERM: a background job of a non-interactive shell starts with
# SIGINT ignored, so a forwarded SIGINT would be discarded (and the terminal's
# own Ctrl-C never reaches the server either).
# Before the server runs there is nothing to stop: just leave.
# shellcheck disable=SC2317  # only called from a trap, which shellcheck 0.9 cannot see
on_signal() {
  if [[ -n "$server_pid" ]]; then
    kill -TERM "$server_pid" 2>/dev/null || true
  else
    exit 130
  fi
}
trap on_signal INT TERM

started=$SECONDS
scripts/install-deps.sh
EXCHANGE_BUILD_TARGETS="exchange-server exchange-client" scripts/build.sh build
echo "run.sh: dependencies and build took $((SECONDS - started)) s" >&2

if [[ -z "${DATABASE_URL:-}" ]]; then
  # Stop it at exit only if it was not already running before us.
  if ! scripts/local-pg.sh status "$PG_DIR" 2>/dev/null; then
    stop_pg=1
  fi
  DATABASE_URL=$(scripts/local-pg.sh start "$PG_DIR" "$PG_PORT" | tail -n 1)
  export DATABASE_URL
  echo "run.sh: DATABASE_URL=$DATABASE_URL" >&2
fi

# Not exec: this shell must stay to run the traps above. The server runs in the
# background only so that the shell can receive signals while waiting for it.
build/bin/exchange-server "$@" &
server_pid=$!
# Say when it serves, and how long that took from the start of run.sh.
port=12345
args=("$@")
for i in "${!args[@]}"; do
  case "${args[$i]}" in
    --port) port=${args[$((i + 1))]:-$port} ;;
    --port=*) port=${args[$i]#--port=} ;;
  esac
done
(
  for _ in $(seq 1 3000); do
    kill -0 "$server_pid" 2>/dev/null || exit 0
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "run.sh: serving on port $port, $((SECONDS - started)) s after run.sh started" >&2
      exit 0
    fi
    sleep 0.2
  done
) &

status=0
wait "$server_pid" || status=$?
# A trapped signal interrupts wait (status > 128) while the server is still
# shutting down: wait again until it has really exited, and keep its status.
while [[ $status -gt 128 ]] && kill -0 "$server_pid" 2>/dev/null; do
  status=0
  wait "$server_pid" || status=$?
done
exit "$status"
