#!/usr/bin/env bash
# A private PostgreSQL 15 cluster for run.sh and test.sh.
#
#   scripts/local-pg.sh start   DATA_DIR PORT   start (initdb first if needed); prints the URL last on stdout
#   scripts/local-pg.sh stop    DATA_DIR        fast shutdown, if running
#   scripts/local-pg.sh status  DATA_DIR        exit 0 if running, 3 if not
#   scripts/local-pg.sh url     DATA_DIR PORT   print the URL
#   scripts/local-pg.sh destroy DATA_DIR        stop and delete the cluster and its log
#
# Why a private cluster rather than the system one: no system service to
# configure, no password, nothing shared between checkouts, and test.sh can
# throw it away and start fresh. It listens on 127.0.0.1 only, and its unix
# socket lives inside the data dir so it never collides with /var/run/postgresql.
#
# Ports: the project's clusters use 25432 (tests), 25600/25601 (study), 25777/25888/25999
# (soak, benchmark, overload), 25442 (abuse), 26000 (profile), 5433 (run.sh): all below Linux's ephemeral range (32768-60999),
# because a restart on a port inside it fails with "Address already in use" whenever some
# client connection happens to hold that number as its local port.
#
# Progress goes to stderr; stdout carries only the URL, so callers can do
# URL=$(scripts/local-pg.sh start DIR PORT | tail -n 1).
set -euo pipefail

PG_BIN=/usr/lib/postgresql/15/bin
DB_NAME=exchange
PG_USER=postgres # the system account that owns clusters when we are root

log() { printf 'local-pg: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}
usage() {
  sed -n '3,7s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
  exit 2
}

# initdb, postgres and pg_ctl refuse to run as root, so as root every server-side
# command runs as the postgres system user. From / because that user may not be
# allowed into the caller's directory (e.g. somewhere under /root), and initdb
# fails when it cannot identify its working directory.
as_owner() {
  if [[ $EUID -eq 0 ]]; then
    (cd / && runuser -u "$PG_USER" -- "$@")
  else
    "$@"
  fi
}

url_for() { printf 'postgresql://postgres@127.0.0.1:%s/%s\n' "$1" "$DB_NAME"; }

# Where a requested DATA_DIR goes when the postgres user cannot reach it: a
# directory under /tmp named after a hash of the requested path, so every later
# call with the same path finds the same cluster.
fallback_dir() {
  local hash
  hash=$(printf '%s' "$1" | sha256sum | cut -c1-16)
  printf '/tmp/exchange-pg-%s/data\n' "$hash"
}

log_file_for() { printf '%s/%s.log\n' "$(dirname "$1")" "$(basename "$1")"; }

# Candidate data dirs for an existing cluster: the requested one, then its fallback.
candidates() { printf '%s\n' "$1" "$(fallback_dir "$1")"; }

is_running() { [[ -f "$1/postmaster.pid" ]] && as_owner "$PG_BIN/pg_ctl" status -D "$1" </dev/null >/dev/null 2>&1; }

# The data dir of the running cluster for REQUESTED, or nothing.
running_dir() {
  local d
  while read -r d; do
    if is_running "$d"; then
      printf '%s\n' "$d"
      return 0
    fi
  done < <(candidates "$1")
  return 0
}

# Pick (and create) the data dir a new or stopped cluster will use; prints it.
prepare_dir() {
  local req=$1 parent
  parent=$(dirname "$req")
  mkdir -p "$parent"
  if [[ $EUID -ne 0 ]]; then
    mkdir -p "$req"
    chmod 700 "$req" # PostgreSQL refuses group/world-accessible data dirs
    printf '%s\n' "$req"
    return
  fi
  # As root: can the postgres user get into the parent? access(2) checks every
  # directory on the way, so a mode-700 /root anywhere above answers "no".
  # (It needs no write access there: root creates DATA_DIR and hands it over.)
  if runuser -u "$PG_USER" -- test -x "$parent" 2>/dev/null; then
    mkdir -p "$req"
    if [[ ! -f "$req/PG_VERSION" ]]; then
      chown "$PG_USER:" "$req"
      chmod 700 "$req"
    fi
    printf '%s\n' "$req"
    return
  fi
  local fb
  fb=$(fallback_dir "$req")
  log "the $PG_USER user cannot reach $req; using $fb instead"
  # /tmp is shared: never follow a symlink someone planted there.
  [[ ! -L "$(dirname "$fb")" && ! -L "$fb" ]] || die "$fb or its parent is a symlink; refusing"
  mkdir -p "$fb"
  chown "$PG_USER:" "$(dirname "$fb")" "$fb"
  chmod 700 "$(dirname "$fb")" "$fb"
  printf '%s\n' "$fb"
}

# Append our settings once, right after initdb. Durability stays at the
# defaults on purpose (fsync, synchronous_commit on): the exchange promises
# that nothing acknowledged is lost, and its tests and measurements must see
# real commit costs.
configure_cluster() {
  local data=$1 quoted
  quoted=${data//\'/\'\'} # single quotes are doubled inside a postgresql.conf string
  cat >>"$data/postgresql.conf" <<EOF

# ---- added by scripts/local-pg.sh ----
listen_addresses = '127.0.0.1'
unix_socket_directories = '$quoted'
max_connections = 200
shared_buffers = 256MB
fsync = on
synchronous_commit = on
EOF
}

cmd_start() {
  local req=$1 port=$2 data logf
  [[ $port =~ ^[0-9]+$ ]] || die "PORT must be a number, got '$port'"
  [[ -x "$PG_BIN/postgres" ]] || die "PostgreSQL 15 is not installed (run scripts/install-deps.sh)"
  if [[ $EUID -eq 0 ]] && ! id "$PG_USER" >/dev/null 2>&1; then
    die "running as root needs the '$PG_USER' system user (it comes with postgresql-15)"
  fi

  data=$(running_dir "$req")
  if [[ -n "$data" ]]; then
    log "already running in $data"
  else
    data=$(prepare_dir "$req")
    logf=$(log_file_for "$data")
    if [[ $EUID -eq 0 ]]; then
      # pg_ctl opens the log as the postgres user; the directory may be root's.
      touch "$logf"
      chown "$PG_USER:" "$logf"
    fi

    if [[ ! -f "$data/PG_VERSION" ]]; then
      log "initdb $data"
      # trust: only loopback and our own socket can reach it. -U postgres makes
      # the superuser 'postgres' whoever runs initdb, so the URL is the same
      # for root and non-root callers.
      if ! as_owner "$PG_BIN/initdb" -D "$data" -U postgres --auth=trust \
        --encoding=UTF8 --locale=C --no-instructions >>"$logf" 2>&1; then
        tail -n 20 "$logf" >&2
        die "initdb failed (log: $logf)"
      fi
      configure_cluster "$data"
    fi

    log "starting on 127.0.0.1:$port (log: $logf)"
    # The port is given at start so one data dir can be started on any port.
    if ! as_owner "$PG_BIN/pg_ctl" start -D "$data" -l "$logf" -w -t 60 -o "-p $port" >&2; then
      tail -n 20 "$logf" >&2
      die "pg_ctl start failed (log: $logf)"
    fi
  fi

  # pg_ctl -w already waited; this also catches a cluster that is running on a
  # different port than the one asked for.
  local tries=0
  until "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$port" -d postgres -U postgres; do
    tries=$((tries + 1))
    if [[ $tries -ge 60 ]]; then
      die "no answer on 127.0.0.1:$port (a cluster running in $data on another port? stop it first)"
    fi
    sleep 0.5
  done

  local psql=("$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres -d postgres)
  if [[ "$("${psql[@]}" -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB_NAME'")" != 1 ]]; then
    log "creating database $DB_NAME"
    "${psql[@]}" -c "CREATE DATABASE $DB_NAME"
  fi
  url_for "$port"
}

cmd_stop() {
  local data
  data=$(running_dir "$1")
  if [[ -z "$data" ]]; then
    log "not running ($1)"
    return 0
  fi
  log "stopping $data"
  as_owner "$PG_BIN/pg_ctl" stop -D "$data" -m fast -w >&2
}

cmd_status() {
  local data
  data=$(running_dir "$1")
  if [[ -n "$data" ]]; then
    log "running in $data"
    return 0
  fi
  log "not running ($1)"
  return 3
}

cmd_destroy() {
  cmd_stop "$1"
  local d
  while read -r d; do
    [[ -e "$d" ]] || continue
    # Refuse to delete anything that does not look like a cluster we made: a
    # typo in DATA_DIR must not wipe a source tree.
    if [[ -n "$(ls -A "$d")" && ! -f "$d/PG_VERSION" ]]; then
      die "$d is not empty and not a PostgreSQL data dir; not deleting it"
    fi
    log "removing $d"
    rm -rf -- "$d" "$(log_file_for "$d")"
  done < <(candidates "$1")
  # The per-path /tmp directory that held a fallback cluster, if now empty.
  rmdir "$(dirname "$(fallback_dir "$1")")" 2>/dev/null || true
}

[[ $# -ge 2 ]] || usage
command=$1
# Absolute paths: pg_ctl runs from /, and the fallback hash must not depend on
# the caller's working directory.
data_dir=$(realpath -m -- "$2")
[[ "$data_dir" != / ]] || die "DATA_DIR must not be /"

case "$command" in
  start)
    [[ $# -eq 3 ]] || usage
    cmd_start "$data_dir" "$3"
    ;;
  url)
    [[ $# -eq 3 ]] || usage
    url_for "$3"
    ;;
  stop) cmd_stop "$data_dir" ;;
  status) cmd_status "$data_dir" ;;
  destroy) cmd_destroy "$data_dir" ;;
  *) usage ;;
esac
