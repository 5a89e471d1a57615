#!/usr/bin/env bash
# The admin port seen by real Prometheus tools (issue: operations):
#   1. `promtool check metrics` accepts the /metrics exposition (names, types, units);
#   2. a real Prometheus server scrapes the exchange every second during a short bench and
#      answers a PromQL query for the request rate, which must be positive.
# Installs Debian's `prometheus` package when missing; prints SKIPPED and exits 77 only if it
# cannot be installed. Needs EXCHANGE_TEST_DATABASE_URL, EXCHANGE_SERVER_BIN and
# EXCHANGE_CLIENT_BIN (./test.sh sets them).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

: "${EXCHANGE_TEST_DATABASE_URL:?set by ./test.sh}"
server_bin=${EXCHANGE_SERVER_BIN:-$PWD/build/bin/exchange-server}
client_bin=${EXCHANGE_CLIENT_BIN:-$PWD/build/bin/exchange-client}
log() { printf 'check_prometheus: %s\n' "$*"; }

if ! command -v promtool >/dev/null || [[ ! -x /usr/bin/prometheus ]]; then
  log "installing Debian's prometheus package (promtool and the server)"
  if ! { apt-get install -y -q --no-install-recommends prometheus >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null 2>&1 &&
      apt-get install -y -q --no-install-recommends prometheus >/dev/null 2>&1; }; }; then
    echo "SKIPPED: the prometheus package cannot be installed here"
    exit 77
  fi
  # The package starts a system service on :9090; this test runs its own on a free port.
  systemctl stop prometheus >/dev/null 2>&1 || true
fi

work=$(mktemp -d /tmp/exchange-prometheus.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
admin=$(free_port)
prom_port=$(free_port)

"$server_bin" --db "$EXCHANGE_TEST_DATABASE_URL" --bind 127.0.0.1 --port "$port" \
  --admin-port "$admin" --reset --log-level warn >"$work/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$admin/healthz" >/dev/null && break; sleep 0.1; done
curl -sf "http://127.0.0.1:$admin/healthz" >/dev/null || { log "server did not come up"; cat "$work/server.log"; exit 1; }

log "promtool check metrics"
curl -sf "http://127.0.0.1:$admin/metrics" >"$work/metrics.txt"
promtool check metrics <"$work/metrics.txt"
log "promtool: the exposition is valid ($(grep -vc '^#' "$work/metrics.txt") series)"

cat >"$work/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: exchange
    static_configs:
      - targets: ["127.0.0.1:$admin"]
YML
promtool check config "$work/prometheus.yml" >/dev/null
/usr/bin/prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$prom_port/-/ready" >/dev/null && break; sleep 0.1; done

log "bench for 6 s while Prometheus scrapes every second"
"$client_bin" bench --port "$port" --clients 4 --duration 6 >"$work/bench.txt" 2>&1 ||
  { cat "$work/bench.txt"; exit 1; }
sleep 2  # one more scrape after the last request

query='sum(rate(exchange_requests_total{outcome="ok"}[5s]))'
answer=$(curl -sf --get "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode "query=$query")
rate=$(python3 -c 'import json,sys; r=json.loads(sys.argv[1])["data"]["result"]; print(max([float(x["value"][1]) for x in r] or [0]))' "$answer")
up=$(curl -sf --get "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode 'query=max_over_time(up{job="exchange"}[30s])' |
  python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)')
# The peak rate over the run, to show the figure and check it is positive.
peak=$(curl -sf --get "http://127.0.0.1:$prom_port/api/v1/query" \
  --data-urlencode "query=max_over_time(${query}[20s:1s])" |
  python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)')
log "Prometheus: up=$up, request rate now ${rate}/s, peak ${peak}/s"
python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) == 1 and float(sys.argv[2]) > 0 else 1)' "$up" "$peak" ||
  { log "FAILED: Prometheus did not scrape a positive request rate"; tail -20 "$work/prometheus.log"; exit 1; }
# Every query of the Grafana dashboard (docker/grafana) must be valid PromQL that this
# Prometheus accepts against the real series.
log "the dashboard's queries"
python3 - "$prom_port" docker/grafana/dashboards/exchange.json <<'PY'
import json, sys, urllib.parse, urllib.request
port, path = sys.argv[1], sys.argv[2]
exprs = [t["expr"] for p in json.load(open(path))["panels"] for t in p["targets"]]
for expr in exprs:
    q = expr.replace("$__rate_interval", "5s")
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": q})
    try:
        answer = json.load(urllib.request.urlopen(url))
    except Exception as e:  # a 400 means PromQL Prometheus refuses
        sys.exit(f"check_prometheus: dashboard query refused: {q}: {e}")
    if answer.get("status") != "success":
        sys.exit(f"check_prometheus: dashboard query failed: {q}: {answer}")
print(f"check_prometheus: {len(exprs)} dashboard queries accepted")
PY
echo "check_prometheus: passed"
