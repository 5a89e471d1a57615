#!/usr/bin/env bash
# Entry point of the postgres:15 stand-in (docker/postgres-standin/Dockerfile). It keeps the
# official image's contract as far as docker/docker-compose.yml and its users need it:
#
#   POSTGRES_PASSWORD          the superuser's password; required, unless
#                              POSTGRES_HOST_AUTH_METHOD=trust
#   POSTGRES_USER              the superuser (default postgres)
#   POSTGRES_DB                a database created at initialisation (default $POSTGRES_USER)
#   POSTGRES_INITDB_ARGS       more initdb flags (e.g. "--data-checksums")
#   POSTGRES_HOST_AUTH_METHOD  pg_hba method for connections over TCP (default scram-sha-256;
#                              md5 works as well); over the Unix socket: trust, as there
#   *_FILE                     each of the first three read from a file (Docker secrets)
#
# - on an empty $PGDATA (/var/lib/postgresql/data, a volume): initdb, then a temporary server
#   on the Unix socket only (so a health check over TCP turns healthy only once the real
#   server runs), POSTGRES_DB created, /docker-entrypoint-initdb.d/* in name order (*.sh
#   executed when executable, else sourced; *.sql and *.sql.gz through psql, stopping at the
#   first error), the temporary server stopped; a $PGDATA that has a database is used as is;
# - the server listens on every address (listen_addresses '*' in the sample configuration);
# - `postgres` and its flags are passed through (compose's `command: ["postgres", "-c",
#   "max_connections=200", ...]`); a first argument starting with "-" means `postgres` with
#   those flags; any other command (bash, psql ...) is run as is, without initialisation;
# - started as root it fixes the ownership of $PGDATA, then runs as the postgres user (uid
#   999, like the official image); started as postgres (--user postgres) it runs as is.
#
# Not kept: *.sql.xz and *.sql.zst init files, POSTGRES_INITDB_WALDIR, an arbitrary --user
# uid (the official image's nss_wrapper), the locale (C.UTF-8 here, en_US.utf8 there).
set -Eeuo pipefail
shopt -s nullglob

log() { echo "docker-entrypoint: $*"; }
die() {
  echo "docker-entrypoint: error: $*" >&2
  exit 1
}

# file_env VAR [DEFAULT]: VAR from the environment, or from the file named by VAR_FILE.
file_env() {
  local var=$1 def=${2:-} file_var="${1}_FILE" val
  if [[ -n "${!var:-}" && -n "${!file_var:-}" ]]; then
    die "both $var and $file_var are set (they are exclusive)"
  fi
  val=$def
  if [[ -n "${!var:-}" ]]; then
    val=${!var}
  elif [[ -n "${!file_var:-}" ]]; then
    val=$(<"${!file_var}")
  fi
  export "$var=$val"
  unset "$file_var"
}

if [[ "${1:-}" == -* ]]; then
  set -- postgres "$@"
fi

if [[ "${1:-}" != postgres ]]; then
  exec "$@"
fi

: "${PGDATA:?PGDATA is not set}"

if [[ "$(id -u)" == 0 ]]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  # Only what is not postgres's already (a large existing cluster is not walked twice).
  find "$PGDATA" \! -user postgres -exec chown postgres:postgres '{}' +
  chmod 700 "$PGDATA"
  chown postgres:postgres /var/run/postgresql
  chmod 3777 /var/run/postgresql
  # The rest of this script as postgres (setpriv: util-linux, in every Debian).
  exec env HOME=/var/lib/postgresql USER=postgres \
    setpriv --reuid=postgres --regid=postgres --init-groups "${BASH_SOURCE[0]}" "$@"
fi

if [[ -s "$PGDATA/PG_VERSION" ]]; then
  log "$PGDATA has a database (PostgreSQL $(<"$PGDATA/PG_VERSION")): no initialisation"
  exec "$@"
fi

# ---- first start: initialise --------------------------------------------------------------
file_env POSTGRES_PASSWORD
file_env POSTGRES_USER postgres
file_env POSTGRES_DB "$POSTGRES_USER"
file_env POSTGRES_INITDB_ARGS
auth=${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}
if [[ -z "$POSTGRES_PASSWORD" && "$auth" != trust ]]; then
  die "the database is uninitialised and POSTGRES_PASSWORD is not set.
  Set it (docker run -e POSTGRES_PASSWORD=...), or POSTGRES_HOST_AUTH_METHOD=trust to let
  every connection in without a password (not recommended)."
fi

mkdir -p "$PGDATA"
chmod 700 "$PGDATA"
log "initdb in $PGDATA (superuser $POSTGRES_USER, database ${POSTGRES_DB})"
initdb_args=(--username="$POSTGRES_USER")
pwfile=""
if [[ -n "$POSTGRES_PASSWORD" ]]; then
  # A file readable by postgres alone, not <(...): /dev/fd is not there in every runtime.
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  initdb_args+=(--pwfile="$pwfile")
fi
# Word splitting intended: POSTGRES_INITDB_ARGS is a list of flags, as in the official image.
# shellcheck disable=SC2086
initdb "${initdb_args[@]}" $POSTGRES_INITDB_ARGS || { rm -f "$pwfile"; exit 1; }
rm -f "$pwfile"

# Connections over TCP need the password (the Unix socket stays trust, as initdb made it).
printf '\n# docker-entrypoint.sh: connections over TCP\nhost all all all %s\n' "$auth" \
  >>"$PGDATA/pg_hba.conf"

# The temporary server: on the Unix socket only, so nothing outside the container (nor a
# health check over TCP) sees a half-initialised database.
pg_ctl -D "$PGDATA" -w -o "-c listen_addresses='' -p ${PGPORT:-5432}" start

psql_cmd=(psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --no-password --no-psqlrc)
if [[ "$POSTGRES_DB" != postgres ]]; then
  log "CREATE DATABASE $POSTGRES_DB"
  "${psql_cmd[@]}" --dbname postgres --set db="$POSTGRES_DB" <<<'CREATE DATABASE :"db";'
fi
export PGPASSWORD="${PGPASSWORD:-$POSTGRES_PASSWORD}"
for f in /docker-entrypoint-initdb.d/*; do
  case "$f" in
    *.sh)
      if [[ -x "$f" ]]; then
        log "running $f"
        "$f"
      else
        log "sourcing $f"
        # shellcheck disable=SC1090
        . "$f"
      fi
      ;;
    *.sql)
      log "running $f"
      "${psql_cmd[@]}" --dbname "$POSTGRES_DB" -f "$f"
      ;;
    *.sql.gz)
      log "running $f"
      gunzip -c "$f" | "${psql_cmd[@]}" --dbname "$POSTGRES_DB"
      ;;
    *) log "ignoring $f" ;;
  esac
done
unset PGPASSWORD

pg_ctl -D "$PGDATA" -m fast -w stop
log "initialisation complete; starting: $*"
exec "$@"
