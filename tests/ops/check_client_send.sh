#!/usr/bin/env bash
# `exchange-client send` exit statuses, against the real server (documented in its --help and
# in the README): 0 when every reply is free of <error>, 3 when a reply holds one (the reply is
# still printed), 1 when the server cannot be reached, 2 on usage errors. And --server with
# several endpoints: a standby's answer sends the request on to the active server; a request
# sent that got no reply is reported as unknown and not sent anywhere else.
# Needs EXCHANGE_TEST_DATABASE_URL and EXCHANGE_SERVER_BIN (./test.sh sets them).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

: "${EXCHANGE_TEST_DATABASE_URL:?set by ./test.sh}"
server_bin=${EXCHANGE_SERVER_BIN:-$PWD/build/bin/exchange-server}
client_bin=${EXCHANGE_CLIENT_BIN:-$PWD/build/bin/exchange-client}
log() { printf 'check_client_send: %s\n' "$*"; }
fail() { log "FAILED: $*"; exit 1; }

work=$(mktemp -d /tmp/exchange-client-send.XXXXXX)
pid=""
standby=""
silent=""
cleanup() {
  [[ -n "$silent" ]] && kill "$silent" 2>/dev/null || true
  [[ -n "$pid" ]] && kill "$pid" 2>/dev/null || true
  [[ -n "$standby" ]] && kill "$standby" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

"$server_bin" --port "$port" --db "$EXCHANGE_TEST_DATABASE_URL" --reset --log-level warn \
  2>"$work/server.log" &
pid=$!
for _ in $(seq 300); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || fail "exchange-server exited at start: $(cat "$work/server.log")"
  sleep 0.1
done

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

# A standby beside it: listed first, it answers that it serves nothing, and the request goes on.
standby_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$server_bin" --port "$standby_port" --db "$EXCHANGE_TEST_DATABASE_URL" --standby --log-level warn \
  2>"$work/standby.log" &
standby=$!
for _ in $(seq 300); do
  (exec 3<>"/dev/tcp/127.0.0.1/$standby_port") 2>/dev/null && break
  kill -0 "$standby" 2>/dev/null || fail "the standby exited at start: $(cat "$work/standby.log")"
  sleep 0.1
done
printf '<create><account id="73" balance="10"/></create>' >"$work/73.xml"
expect 0 --server "127.0.0.1:$standby_port,127.0.0.1:$port" "$work/73.xml"
grep -q '<created id="73"/>' "$work/out" || fail "not served by the active server: $(cat "$work/out")"
grep -q "serves nothing (standby)" "$work/err" || fail "the detour was not reported: $(cat "$work/err")"
expect 3 --server "127.0.0.1:$standby_port" "$work/ok.xml"
grep -q "this exchange server is the standby" "$work/out" || fail "no standby error: $(cat "$work/out")"
log "--server: a standby's answer sends the request to the next server; alone, it is printed"

# A server that takes the request and closes without a reply: unknown, not sent again.
silent_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()
while True:
    c, _ = s.accept(); c.recv(65536); c.close()' "$silent_port" &
silent=$!
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$silent_port") 2>/dev/null && break
  sleep 0.05
done
printf '<create><account id="74" balance="10"/></create>' >"$work/74.xml"
expect 1 --server "127.0.0.1:$silent_port,127.0.0.1:$port" "$work/74.xml"
grep -q "unknown: sent to" "$work/err" || fail "not reported as unknown: $(cat "$work/err")"
kill "$silent"
wait "$silent" 2>/dev/null || true
silent=""
expect 0 "$work/74.xml"  # account 74 did not exist: the request was not sent on
log "--server: a request without a reply is reported as unknown and not sent again"
kill -TERM "$standby"
wait "$standby" || true
standby=""

kill -TERM "$pid"
wait "$pid" || true
pid=""
expect 1 "$work/ok.xml"
log "no server: exit 1"
