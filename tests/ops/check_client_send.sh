#!/usr/bin/env bash
# `exchange-client send` exit statuses, against the real server (documented in its --help and
# in the README): 0 when every reply is free of <error>, 3 when a reply holds one (the reply is
# still printed), 1 when the server cannot be reached, 2 on usage errors.
# Needs EXCHANGE_TEST_DATABASE_URL and EXCHANGE_SERVER_BIN (./test.sh sets them).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

: "${EXCHANGE_TEST_DATABASE_URL:?set by ./test.sh}"
server_bin=${EXCHANGE_SERVER_BIN:-$PWD/build/bin/exchange-server}
client_bin=${EXCHANGE_CLIENT_BIN:-$PWD/build/bin/exchange-client}
log() { printf 'check_client_send: %s\n' "$*"; }
fail() { log "FAILED: $*"; exit 1; }
source tests/ops/lib/start_server.sh

ops_workdir client-send
start_server "$work/server.log" "$server_bin" --db "$EXCHANGE_TEST_DATABASE_URL" --reset \
  --log-level warn

# expect STATUS FILE...: runs the client on the files, checks its exit status.
expect() {
  local want=$1 got=0
  shift
  "$client_bin" send --port "$port" "$@" >"$work/out" 2>"$work/err" || got=$?
  [[ $got -eq $want ]] || fail "send $* exited $got, expected $want: $(cat "$work/out" "$work/err")"
}

printf '<create><account id="71" balance="10"/></create>' >"$work/ok.xml"
printf '<create><account id="71" balance="10"/></create>' >"$work/again.xml"  # exists by then
printf '<create><account id="x-1" balance="10"/></create>' >"$work/bad.xml"
expect 0 "$work/ok.xml"
log "a clean reply: exit 0"
expect 3 "$work/again.xml"
grep -q "<error" "$work/out" || fail "the refused reply was not printed"
expect 3 "$work/bad.xml" "$work/ok.xml"
[[ $(grep -c "^== " "$work/out") -eq 2 ]] || fail "both replies should be printed: $(cat "$work/out")"
log "a reply holding <error>: exit 3, and every reply printed"
expect 2
log "no file: exit 2"

stop_server || true
expect 1 "$work/ok.xml"
log "no server: exit 1"
