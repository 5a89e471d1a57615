#!/usr/bin/env bash
# Container health check (compose's healthcheck; also usable as a Kubernetes exec probe):
#   exchange-healthcheck [PORT]              PORT defaults to $EXCHANGE_ADMIN_PORT
#   exchange-healthcheck --standby [PORT]    for a hot standby (exchange-server --standby); the
#                                            same when EXCHANGE_STANDBY is 1 in its environment
# GETs /healthz on 127.0.0.1:PORT, the admin port of exchange-server (--admin-port), and
# exits 0 only on "200". No curl in the image: bash's /dev/tcp speaks the one request.
# Prints the status line and the one-line reason, which `docker inspect` shows.
#
# --standby: a standby answers /healthz with 503 by design (it serves nothing; a load
# balancer must not send it clients), so that alone would leave its container unhealthy
# forever. With --standby, also a 503 whose reason is "standby: following the active
# server's journal, … N ms behind" counts as healthy, if N is below
# $EXCHANGE_STANDBY_MAX_LAG_MS (default 10000, like --ready-max-lag-ms): the standby has
# loaded the state and keeps up, so it can take over. Once it has taken over it answers 200
# like any active server. Loading, taking over, or lagging (PostgreSQL unreachable) is
# unhealthy.
set -uo pipefail
standby=0
if [[ "${1:-}" == --standby ]]; then
  standby=1
  shift
fi
# A container started as a standby (docker/entrypoint.sh: EXCHANGE_STANDBY=1) is judged as one
# whatever its health check's arguments.
case "${EXCHANGE_STANDBY:-0}" in 1 | true | yes) standby=1 ;; esac
port=${1:-${EXCHANGE_ADMIN_PORT:-}}
if [[ -z "$port" ]]; then
  echo "exchange-healthcheck: no admin port (set EXCHANGE_ADMIN_PORT or pass PORT)" >&2
  exit 1
fi
max_lag_ms=${EXCHANGE_STANDBY_MAX_LAG_MS:-10000}
# The whole exchange is bounded: a server that accepts and never answers is unhealthy too.
reply=$(timeout 5 bash -c '
  exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
  printf "GET /healthz HTTP/1.0\r\nHost: localhost\r\nConnection: close\r\n\r\n" >&3
  cat <&3' _ "$port" 2>&1) || { echo "exchange-healthcheck: no answer on 127.0.0.1:$port"; exit 1; }
status=$(head -n 1 <<<"$reply" | tr -d '\r')
body=$(sed '1,/^\r\{0,1\}$/d' <<<"$reply" | head -n 1)
echo "$status${body:+: $body}"
[[ "$status" =~ ^HTTP/[0-9.]+\ 200\  || "$status" =~ ^HTTP/[0-9.]+\ 200$ ]] && exit 0
if [[ $standby -eq 1 && "$status" =~ ^HTTP/[0-9.]+\ 503 \
  && "$body" =~ ^standby:\ following\ .*\ ([0-9]+)\ ms\ behind ]]; then
  lag=${BASH_REMATCH[1]}
  [[ $lag -lt $max_lag_ms ]] && exit 0
  echo "exchange-healthcheck: the standby is $lag ms behind (EXCHANGE_STANDBY_MAX_LAG_MS $max_lag_ms)"
fi
exit 1
