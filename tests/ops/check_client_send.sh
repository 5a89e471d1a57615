#!/usr/bin/env bash
# `exchange-client send` exit statuses, against the real server (documented in its --help and
# in the README): 0 when every reply is free of <error>, 3 when a reply holds one (the reply is
# still printed), 4 when a request was sent and no reply came (outcome unknown, never resent),
# 1 when no server can be reached (or a --ca cannot be loaded), 2 on usage errors (also TLS and
# logon flags that do not go together). And --servers beside a standby.
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
standby_pid=""
silent=""
cleanup() {
  [[ -n "$silent" ]] && kill "$silent" 2>/dev/null || true
  [[ -n "$standby_pid" ]] && kill "$standby_pid" 2>/dev/null || true
  ops_cleanup
}
trap cleanup EXIT

start_server "$work/server.log" "$server_bin" --db "$EXCHANGE_TEST_DATABASE_URL" --reset \
  --log-level warn
active_port=$port active_pid=$pid

# expect STATUS ARG...: runs the client with ARGs (--port of the active server unless they
# give --servers), checks its exit status.
expect() {
  local want=$1 got=0
  shift
  "$client_bin" send --port "$active_port" "$@" >"$work/out" 2>"$work/err" || got=$?
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
expect 2 --ca "$work/ok.xml" "$work/ok.xml"
grep -q -- "--ca, --cert and --key need --tls" "$work/err" || fail "no reason: $(cat "$work/err")"
expect 2 --tls --cert "$work/ok.xml" "$work/ok.xml"
expect 2 --principal alice "$work/ok.xml"
expect 1 --tls --ca "$work/missing.pem" "$work/ok.xml"
grep -q "cannot load --ca $work/missing.pem: No such file or directory" "$work/err" ||
  fail "no OpenSSL reason: $(cat "$work/err")"
log "TLS and logon flags: usage errors exit 2; a CA that cannot be loaded exits 1 with the reason"

# A standby beside it: listed first, it answers that it serves nothing, and the request goes on.
start_server "$work/standby.log" "$server_bin" --db "$EXCHANGE_TEST_DATABASE_URL" --standby \
  --log-level warn
standby_port=$port standby_pid=$pid
port=$active_port pid=$active_pid
printf '<create><account id="73" balance="10"/></create>' >"$work/73.xml"
expect 0 --servers "127.0.0.1:$standby_port,127.0.0.1:$active_port" "$work/73.xml"
grep -q '<created id="73"/>' "$work/out" || fail "not served by the active server: $(cat "$work/out")"
grep -q "127.0.0.1:$standby_port: does not serve now; trying 127.0.0.1:$active_port" "$work/err" ||
  fail "the detour was not reported: $(cat "$work/err")"
expect 3 --servers "127.0.0.1:$standby_port" "$work/ok.xml"
grep -q "is the standby" "$work/out" || fail "no standby error: $(cat "$work/out")"
log "--servers: a standby's answer sends the request to the next server; alone, it is printed"

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
expect 4 --servers "127.0.0.1:$silent_port,127.0.0.1:$active_port" "$work/74.xml"
grep -q "but no reply came" "$work/err" || fail "not reported as unknown: $(cat "$work/err")"
kill "$silent"
wait "$silent" 2>/dev/null || true
silent=""
expect 0 "$work/74.xml"  # account 74 did not exist: the request was not sent on
log "--servers: a request without a reply is reported as unknown (exit 4) and not sent again"
kill -TERM "$standby_pid"
wait "$standby_pid" || true
standby_pid=""

stop_server || true
expect 1 "$work/ok.xml"
log "no server: exit 1"
