#!/usr/bin/env bash
# Container entry point: turn the environment into exchange-server flags.
#   DATABASE_URL           required; the server reads it from the environment
#   EXCHANGE_CONCURRENCY   concurrency model (default pool)
#   EXCHANGE_THREADS       worker threads (default 4)
#   EXCHANGE_SCHEMA        schema.sql the server applies (default /opt/exchange/schema.sql)
#   EXCHANGE_ADMIN_PORT    if set: --admin-port (HTTP /metrics and /healthz; compose sets 9100)
#   EXCHANGE_ADMIN_BIND    if set: --admin-bind (the server's default is 127.0.0.1; compose
#                          sets 0.0.0.0 so Prometheus in another container can scrape it)
#   EXCHANGE_STANDBY       1 (or true, yes): --standby, the hot standby of the server holding
#                          the database (compose's exchange-standby service, and the exchange
#                          service of a pair; unset or 0: an ordinary server); left out when
#                          the arguments include --reset
#   EXCHANGE_PRINCIPALS    if set: --principals FILE (authentication on); unset: the server runs
#                          with --allow-unauthenticated (the compose file publishes the port on
#                          the host's 127.0.0.1 only)
#   EXCHANGE_TLS_CERT, EXCHANGE_TLS_KEY, EXCHANGE_TLS_CLIENT_CA  if set: --tls-cert, --tls-key,
#                          --tls-client-ca
#   EXCHANGE_DEV_SECRETS   1: make development credentials on first start (exchange-dev-secrets,
#                          in /var/lib/exchange/secrets) and serve with them: TLS, client
#                          certificates, principal "ops" (what the compose file does); the
#                          EXCHANGE_PRINCIPALS and EXCHANGE_TLS_* set explicitly win
# Arguments (compose `command:`, or after the image name in docker run) are
# appended, so any other server flag can be given there.
set -euo pipefail

if [[ -z "${DATABASE_URL:-}" ]]; then
  echo "exchange-entrypoint: DATABASE_URL is not set (e.g. postgresql://postgres:PASSWORD@db:5432/exchange)" >&2
  exit 2
fi

admin=()
if [[ -n "${EXCHANGE_ADMIN_PORT:-}" ]]; then
  admin+=(--admin-port "$EXCHANGE_ADMIN_PORT")
fi
if [[ -n "${EXCHANGE_ADMIN_BIND:-}" ]]; then
  admin+=(--admin-bind "$EXCHANGE_ADMIN_BIND")
fi

# Not for a one-off `run ... --reset` (the two flags exclude each other): that run is the one
# writer by itself.
standby=()
case "${EXCHANGE_STANDBY:-0}" in
  1 | true | yes) [[ " $* " == *" --reset "* ]] || standby=(--standby) ;;
  0 | false | no | "") ;;
  *)
    echo "exchange-entrypoint: EXCHANGE_STANDBY is '$EXCHANGE_STANDBY' (1 or 0)" >&2
    exit 2
    ;;
esac

# exec: the server becomes PID 1's process, so docker stop's SIGTERM reaches it
# directly and it can shut down cleanly.
# --bind 0.0.0.0 unless the arguments say otherwise: inside the container, so other containers
# and the published port reach it; the compose file publishes it on the host's 127.0.0.1.
bind=(--bind 0.0.0.0)
for arg in "$@"; do
  [[ "$arg" == --bind || "$arg" == --bind=* ]] && bind=()
done

# Authentication (docs/OPERATIONS.md "Authentication and TLS"): inside the container the server
# binds 0.0.0.0, which it refuses to do without --principals unless told it is wanted.
case "${EXCHANGE_DEV_SECRETS:-0}" in
  1 | true | yes)
    secrets=/var/lib/exchange/secrets
    exchange-dev-secrets "$secrets"
    : "${EXCHANGE_PRINCIPALS:=$secrets/principals.txt}"
    : "${EXCHANGE_TLS_CERT:=$secrets/server.crt}"
    : "${EXCHANGE_TLS_KEY:=$secrets/server.key}"
    : "${EXCHANGE_TLS_CLIENT_CA:=$secrets/ca.crt}"
    ;;
  0 | false | no | "") ;;
  *)
    echo "exchange-entrypoint: EXCHANGE_DEV_SECRETS is '$EXCHANGE_DEV_SECRETS' (1 or 0)" >&2
    exit 2
    ;;
esac
security=()
if [[ -n "${EXCHANGE_PRINCIPALS:-}" ]]; then
  security+=(--principals "$EXCHANGE_PRINCIPALS")
elif [[ ${#bind[@]} -gt 0 ]]; then
  security+=(--allow-unauthenticated)
fi
[[ -n "${EXCHANGE_TLS_CERT:-}" ]] && security+=(--tls-cert "$EXCHANGE_TLS_CERT")
[[ -n "${EXCHANGE_TLS_KEY:-}" ]] && security+=(--tls-key "$EXCHANGE_TLS_KEY")
[[ -n "${EXCHANGE_TLS_CLIENT_CA:-}" ]] && security+=(--tls-client-ca "$EXCHANGE_TLS_CLIENT_CA")

exec exchange-server \
  "${bind[@]}" \
  "${security[@]}" \
  --concurrency "${EXCHANGE_CONCURRENCY:-pool}" \
  --threads "${EXCHANGE_THREADS:-4}" \
  --schema "${EXCHANGE_SCHEMA:-/opt/exchange/schema.sql}" \
  "${admin[@]}" \
  "${standby[@]}" \
  "$@"
