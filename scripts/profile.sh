#!/usr/bin/env bash
# Where the time goes in one benchmark case: CPU profiles (perf, cpu-clock samples, so it also
# works on VMs without hardware counters) of the exchange server and of the PostgreSQL backend
# that does its group commits, while `exchange-client bench` loads it.
#
#   scripts/profile.sh [--model reactor] [--seconds 8] [-- BENCH ARGS...]
#   scripts/profile.sh --model reactor -- --clients 64 --persistent      (the default case)
#
# Prints the top functions of each process (self time), the server's commit statistics
# (requests per batch, time per commit, from its log at exit) and the bench summary.
# Needs build/bin (scripts/build.sh) and perf (apt-get install linux-perf); uses a private
# PostgreSQL in .local/profile-pg (port 26000) unless --db URL is given.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

model=reactor seconds=8 db="" bench_args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --model) model=$2; shift ;;
    --seconds) seconds=$2; shift ;;
    --db) db=$2; shift ;;
    --) shift; bench_args=("$@"); break ;;
    -h | --help) sed -n '2,12s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "profile.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ ${#bench_args[@]} -gt 0 ]] || bench_args=(--clients 64 --persistent)
command -v perf >/dev/null || { echo "profile.sh: perf is missing (apt-get install linux-perf)" >&2; exit 1; }

if [[ -z "$db" ]]; then
  db=$(scripts/local-pg.sh start .local/profile-pg 26000 | tail -n 1)
fi
out=$(mktemp -d)
port=24777
build/bin/exchange-server --port "$port" --bind 127.0.0.1 --db "$db" --concurrency "$model" \
  --reset --log-level info 2>"$out/server.log" &
server=$!
trap 'kill $server 2>/dev/null || true; rm -rf "$out"' EXIT
for _ in $(seq 100); do
  (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break
  sleep 0.1
done

build/bin/exchange-client bench --port "$port" --duration "$seconds" --warmup 1 --no-progress \
  "${bench_args[@]}" >"$out/bench.txt" &
bench=$!
sleep 2 # past the setup and warm-up
# The backend that writes the batches is the busiest one of the database.
backend=$(ps -o pid=,pcpu=,args= -u postgres | grep -v "grep" | awk '/postgres: .*exchange/ {print $2, $1}' |
  sort -rn | head -n 1 | awk '{print $2}')
perf record -q -e cpu-clock -F 1999 -g -o "$out/server.perf" -p "$server" -- sleep "$((seconds - 3))" 2>/dev/null &
p1=$!
if [[ -n "$backend" ]]; then
  perf record -q -e cpu-clock -F 1999 -g -o "$out/pg.perf" -p "$backend" -- sleep "$((seconds - 3))" 2>/dev/null &
fi
wait $p1 || true
wait $bench
kill -TERM $server
wait $server || true

# Self-time share and symbol, trimmed to a readable width (perf pads its columns to the
# longest C++ name). A subshell without pipefail: head closing the pipe early is not an error.
top() (
  set +o pipefail
  perf report -i "$1" --stdio --no-children --sort symbol -g none 2>/dev/null |
    grep -E '^ +[0-9]+\.[0-9]+%' | sed -E 's/ +-? +-? *$//' | cut -c1-110 | head -n "${2:-15}"
)
echo "== bench (${bench_args[*]}), server model $model"
grep -E 'throughput|latency ms' "$out/bench.txt"
echo
echo "== server: top functions (self time)"
top "$out/server.perf"
if [[ -f "$out/pg.perf" ]]; then
  echo
  echo "== PostgreSQL backend $backend (the group commit's connection): top functions"
  top "$out/pg.perf"
fi
echo
echo "== server's own counters at exit"
grep -E 'stopped after' "$out/server.log" | tail -n 5 || true
