#!/usr/bin/env bash
# exchange-floor, the benchmark's durable floor, does what scripts/benchmark.py relies on:
#   1. it answers a one-shot and a persistent-session request with a one-order <results> only
#      after journaling each as one row (count checked in PostgreSQL);
#   2. it refuses a database that holds an exchange's data (it must never write into one);
#   3. SIGTERM ends it with status 0.
# Needs EXCHANGE_TEST_DATABASE_URL (./test.sh sets it); the floor gets a database of its own.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

: "${EXCHANGE_TEST_DATABASE_URL:?set by ./test.sh}"
export PGOPTIONS="--client-min-messages=warning"
floor_bin=${EXCHANGE_FLOOR_BIN:-$PWD/build/bin/exchange-floor}
client_bin=${EXCHANGE_CLIENT_BIN:-$PWD/build/bin/exchange-client}
log() { printf 'check_floor: %s\n' "$*"; }
fail() { log "FAILED: $*"; exit 1; }
source tests/ops/lib/start_server.sh

base=${EXCHANGE_TEST_DATABASE_URL%/*}
floor_db="$base/exchange_floor_check"
psql "$EXCHANGE_TEST_DATABASE_URL" -qAt -c "DROP DATABASE IF EXISTS exchange_floor_check" \
  -c "CREATE DATABASE exchange_floor_check" >/dev/null

ops_workdir floor
start_server "$work/floor.log" "$floor_bin" --db "$floor_db" --reset --log-level warn

printf '<transactions id="1"><order sym="X" amount="1" limit="1"/></transactions>' >"$work/one.xml"
one=$("$client_bin" send "$work/one.xml" --port "$port")
[[ "$one" == *"<results><opened "*"</results>"* ]] || fail "one-shot reply: $one"
two=$("$client_bin" send "$work/one.xml" "$work/one.xml" --persistent --port "$port")
[[ $(grep -o "<opened " <<<"$two" | wc -l) -eq 2 ]] || fail "persistent replies: $two"
rows=$(psql "$floor_db" -qAt -c "SELECT count(*) FROM journal")
[[ "$rows" == 3 ]] || fail "expected 3 journal rows, found $rows"
log "3 requests answered after 3 journal rows committed"

status=0
stop_server || status=$?
[[ $status -eq 0 ]] || fail "SIGTERM exit status $status: $(cat "$work/floor.log")"
log "SIGTERM: exit 0"

# An exchange's database (accounts in it) is refused, whatever flags are given.
psql "$floor_db" -qAt -c "INSERT INTO accounts (id, balance, deposited) VALUES ('1', 1, 1)" >/dev/null
status=0
"$floor_bin" --port "$port" --db "$floor_db" --log-level warn 2>"$work/refused.log" || status=$?
[[ $status -ne 0 ]] || fail "started on a database holding an exchange's accounts"
log "an exchange's database is refused (exit $status: $(head -c 200 "$work/refused.log"))"
psql "$EXCHANGE_TEST_DATABASE_URL" -qAt -c "DROP DATABASE IF EXISTS exchange_floor_check" >/dev/null
log "passed"
