#!/usr/bin/env bash
# exchange-client with the compose stack's development credentials (the principal "ops", whose
# certificate exchange-dev-secrets made): exchange-dev-client send FILE..., exchange-dev-client
# bench --host exchange ... The server's certificate is checked against the stack's own CA.
set -euo pipefail
secrets=${EXCHANGE_SECRETS_DIR:-/var/lib/exchange/secrets}
[[ $# -ge 1 ]] || { echo "usage: exchange-dev-client send|bench [flags...]" >&2; exit 2; }
command=$1
shift
exec exchange-client "$command" --tls --ca "$secrets/ca.crt" --cert "$secrets/ops.crt" \
  --key "$secrets/ops.key" "$@"
