#!/usr/bin/env bash
# Development credentials for the compose stack, made on its first start (exchange-dev-secrets
# DIR, default /var/lib/exchange/secrets, a volume both servers of a pair share):
#   ca.crt/ca.key        a CA made here, for this stack alone
#   server.crt/.key      the servers' certificate: exchange, exchange-standby, localhost, 127.0.0.1
#   ops.crt/.key         the client certificate of the principal "ops"
#   principals.txt       ops admin,trade * -   (every right; certificate logon only)
# Nothing is made when principals.txt exists. These are development secrets: for production,
# make your own (docs/OPERATIONS.md "Authentication and TLS") and point EXCHANGE_PRINCIPALS and
# EXCHANGE_TLS_* at them.
set -euo pipefail
dir=${1:-/var/lib/exchange/secrets}
[[ -f "$dir/principals.txt" ]] && exit 0

# Both servers of a pair start at once: one makes the files, the other waits for them. A lock
# left by a container killed while making them is taken over after 10 s.
lock="$dir/.making"
for _ in $(seq 1 100); do
  mkdir "$lock" 2>/dev/null && break
  [[ -f "$dir/principals.txt" ]] && exit 0
  sleep 0.1
done
mkdir -p "$lock"
trap 'rm -rf "$lock" "${tmp:-}"' EXIT
[[ -f "$dir/principals.txt" ]] && exit 0

tmp=$(mktemp -d "$dir/.new.XXXXXX")
cd "$tmp"
newkey() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null; }
newkey ca
openssl req -x509 -new -key ca.key -out ca.crt -subj "/CN=exchange compose development CA" \
  -days 3650 2>/dev/null
issue() { # NAME CN [EXTENSIONS]
  newkey "$1"
  openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$2" 2>/dev/null
  printf '%s\n' "${3:-extendedKeyUsage=clientAuth}" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" \
    -days 825 -extfile "$1.ext" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
issue server exchange "subjectAltName=DNS:exchange,DNS:exchange-standby,DNS:localhost,IP:127.0.0.1"
issue ops ops
printf '# made by exchange-dev-secrets: development only\nops admin,trade * -\n' >principals.txt
chmod 600 ./*.key
rm -f ca.srl
# principals.txt last: its presence says the rest is there.
mv ca.crt ca.key server.crt server.key ops.crt ops.key "$dir/"
mv principals.txt "$dir/"
echo "exchange-dev-secrets: made a development CA, certificates and principals file in $dir" >&2
