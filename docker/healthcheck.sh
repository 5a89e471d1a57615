#!/usr/bin/env bash
# Container health check (compose's healthcheck; also usable as a Kubernetes exec probe):
#   exchange-healthcheck [PORT]    PORT defaults to $EXCHANGE_ADMIN_PORT
# GETs /healthz on 127.0.0.1:PORT, the admin port of exchange-server (--admin-port), and
# exits 0 only on "200". No curl in the image: bash's /dev/tcp speaks the one request.
# Prints the status line and the one-line reason, which `docker inspect` shows.
set -uo pipefail
port=${1:-${EXCHANGE_ADMIN_PORT:-}}
if [[ -z "$port" ]]; then
  echo "exchange-healthcheck: no admin port (set EXCHANGE_ADMIN_PORT or pass PORT)" >&2
  exit 1
fi
# The whole exchange is bounded: a server that accepts and never answers is unhealthy too.
reply=$(timeout 5 bash -c '
  exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
  printf "GET /healthz HTTP/1.0\r\nHost: localhost\r\nConnection: close\r\n\r\n" >&3
  cat <&3' _ "$port" 2>&1) || { echo "exchange-healthcheck: no answer on 127.0.0.1:$port"; exit 1; }
status=$(head -n 1 <<<"$reply" | tr -d '\r')
body=$(sed '1,/^\r\{0,1\}$/d' <<<"$reply" | head -n 1)
echo "$status${body:+: $body}"
[[ "$status" =~ ^HTTP/[0-9.]+\ 200\  || "$status" =~ ^HTTP/[0-9.]+\ 200$ ]]
