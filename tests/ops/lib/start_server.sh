# Sourced by the ops checks that run one of our servers (check_client_send.sh, check_floor.sh):
# a work folder and a server process, both gone when the script exits, and a start that waits
# until the server accepts connections. The caller defines log() and fail() before using it.
#   ops_workdir NAME         work=/tmp/exchange-NAME.XXXXXX, removed at exit with the server
#   start_server LOG BIN ARG...
#                            runs `BIN --port $port ARG...` in the background (stderr to LOG) on
#                            a free loopback port; sets port and pid; fails if it exits first or
#                            is not accepting connections within 30 s
#   stop_server              SIGTERM, then waits; returns the server's exit status

pid=""
port=""

ops_cleanup() {
  [[ -n "$pid" ]] && kill "$pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}

ops_workdir() {
  work=$(mktemp -d "/tmp/exchange-$1.XXXXXX")
  trap ops_cleanup EXIT
}

start_server() {
  local server_log=$1 bin=$2
  shift 2
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$bin" --port "$port" "$@" 2>"$server_log" &
  pid=$!
  for _ in $(seq 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || fail "$(basename "$bin") exited at start: $(cat "$server_log")"
    sleep 0.1
  done
  fail "$(basename "$bin") did not accept connections on port $port: $(cat "$server_log")"
}

stop_server() {
  local status=0
  kill -TERM "$pid"
  wait "$pid" || status=$?
  pid=""
  return "$status"
}
