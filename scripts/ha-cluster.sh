#!/usr/bin/env bash
# A local highly available PostgreSQL 15: etcd (one member, or three) and two Patroni-managed
# nodes.
#
#   scripts/ha-cluster.sh up [--sync on|strict|off] [--ports BASE] [--etcd-members 1|3] [DIR]
#                                     start what is not running (bootstrap first if needed);
#                                     waits for a leader and, unless --sync off, a synchronous
#                                     standby; prints the multi-host URL last on stdout
#   scripts/ha-cluster.sh status      [DIR]  patronictl list (exit 3 when not running)
#   scripts/ha-cluster.sh kill-leader [DIR]  SIGKILL the leader's postmaster (not Patroni)
#   scripts/ha-cluster.sh url [--ports BASE] [DIR]   print the multi-host URL
#   scripts/ha-cluster.sh down        [DIR]  stop Patroni, PostgreSQL and etcd; keep the data
#   scripts/ha-cluster.sh destroy     [DIR]  down, then delete DIR
#
# DIR defaults to .local/ha in the checkout. Ports (BASE defaults to 25500, or $HA_PORT_BASE):
# etcd client BASE, etcd peer BASE+1, Patroni REST API BASE+10 and BASE+11, PostgreSQL BASE+20
# and BASE+21. All are below Linux's ephemeral range (32768-60999) for the reason local-pg.sh
# gives: a restart on a port inside it fails whenever a client connection happens to hold it.
#
# --etcd-members (default 1): 3 runs the etcd members ha-etcd, ha-etcd2 and ha-etcd3 (client and
# peer ports BASE/BASE+1, BASE+2/BASE+3, BASE+4/BASE+5; data in DIR/etcd, DIR/etcd2, DIR/etcd3),
# so losing any one keeps the quorum, and Patroni is given all three. The count is kept in
# DIR/etcd-members until `destroy`; a 3-member cluster also keeps its ports (its members know
# each other's peer URLs), so changing either means `destroy` first. `up` restarts a member that
# is down, which rejoins with its data.
#
# --sync (or $HA_SYNC):
#   on      synchronous_mode: true. Patroni names the standby in synchronous_standby_names, so
#           a commit returns only once the standby has flushed its WAL; Patroni promotes only
#           that synchronous standby, so an acknowledged commit survives losing the primary.
#           When the standby is gone, Patroni drops it from synchronous_standby_names and the
#           primary carries on alone (available, but a second failure then loses commits).
#   strict  synchronous_mode_strict as well: with no synchronous standby the primary never
#           goes asynchronous, so writes *stop* (commits wait) until a standby is back. Zero
#           loss even across a double failure, paid for in availability.
#   off     asynchronous streaming replication: commits return after the local flush; a
#           failover can lose the last commits the standby had not received. For comparison.
#
# Everything runs on 127.0.0.1 with trust authentication (like local-pg.sh: only loopback and
# the sockets inside DIR can reach it). PostgreSQL and Patroni refuse to run as root, so as
# root they run as the postgres system user; when that user cannot reach DIR (a mode-700
# /root above it), the cluster goes to /tmp/exchange-ha-<hash of DIR>/ and the script says so.
#
# Progress goes to stderr; stdout carries only the URL, so callers can do
# URL=$(scripts/ha-cluster.sh up | tail -n 1).
set -euo pipefail

PG_BIN=/usr/lib/postgresql/15/bin
PG_USER=postgres
DB_NAME=exchange
SCOPE=exchange-ha
NODES=(node1 node2)
UP_TIMEOUT_S=${HA_UP_TIMEOUT_S:-180}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

log() { printf 'ha-cluster: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}
# Exit 77 means "cannot run here at all" (packages missing and not installable), which the
# failover test turns into a skip; every other failure is a real error.
skip() {
  log "cannot run: $*"
  exit 77
}
usage() {
  # The comment above, from the commands to the options (not the notes after them).
  sed -n '5,/^# Everything runs/{/^# Everything runs/d;s/^# \{0,1\}//p;}' "${BASH_SOURCE[0]}" >&2
  exit 2
}

as_owner() {
  if [[ $EUID -eq 0 ]]; then
    (cd / && runuser -u "$PG_USER" -- "$@")
  else
    "$@"
  fi
}

# ---- packages --------------------------------------------------------------------------------
# Installed here rather than in install-deps.sh: the Docker image uses that list, and only this
# script (and its test) needs an HA stack.
ensure_packages() {
  local pkg status missing=()
  for pkg in patroni etcd-server etcd-client postgresql-15 python3; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
  done
  [[ ${#missing[@]} -gt 0 ]] || return 0
  local sudo_cmd=()
  if [[ $EUID -ne 0 ]]; then
    command -v sudo >/dev/null || skip "need root or sudo to install ${missing[*]}"
    sudo_cmd=(sudo)
  fi
  log "installing ${missing[*]}"
  local apt_opts=(-y -q -o DPkg::Lock::Timeout=300)
  # The Debian packages try to start system-wide services; where there is an init system they
  # would listen on the default ports, which we never use.
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" update >&2 ||
    skip "apt-get update failed"
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" install \
    --no-install-recommends "${missing[@]}" >&2 || skip "cannot install ${missing[*]}"
}

# ---- layout ----------------------------------------------------------------------------------
fallback_dir() {
  local hash
  hash=$(printf '%s' "$1" | sha256sum | cut -c1-16)
  printf '/tmp/exchange-ha-%s\n' "$hash"
}

# The directory actually used for REQUESTED: itself, or its /tmp fallback when the postgres
# user cannot reach it (and a cluster already lives there, or we are about to create one).
resolve_dir() {
  local req=$1 fb
  fb=$(fallback_dir "$req")
  if [[ -d "$fb" && ! -d "$req/node1" ]]; then
    printf '%s\n' "$fb"
    return
  fi
  if [[ $EUID -eq 0 ]]; then
    mkdir -p "$(dirname "$req")"
    if ! runuser -u "$PG_USER" -- test -x "$(dirname "$req")" 2>/dev/null; then
      printf '%s\n' "$fb"
      return
    fi
  fi
  printf '%s\n' "$req"
}

port_of() { # role: etcd | peer | etcdN | peerN (member N, 1-3) | api1 | api2 | pg1 | pg2
  case $1 in
    etcd | etcd1) echo $((BASE)) ;;
    peer | peer1) echo $((BASE + 1)) ;;
    etcd2) echo $((BASE + 2)) ;;
    peer2) echo $((BASE + 3)) ;;
    etcd3) echo $((BASE + 4)) ;;
    peer3) echo $((BASE + 5)) ;;
    api1) echo $((BASE + 10)) ;;
    api2) echo $((BASE + 11)) ;;
    pg1) echo $((BASE + 20)) ;;
    pg2) echo $((BASE + 21)) ;;
  esac
}

url() {
  printf 'postgresql://%s@127.0.0.1:%s,127.0.0.1:%s/%s?target_session_attrs=read-write\n' \
    "$PG_USER" "$(port_of pg1)" "$(port_of pg2)" "$DB_NAME"
}

pid_alive() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

# The ports an existing cluster was started with win over --ports: they are in its configs.
load_ports() {
  if [[ -f "$DIR/ports" ]]; then BASE=$(cat "$DIR/ports"); fi
}

# The etcd member count DIR was bootstrapped with: DIR/etcd-members, or 1 for an etcd made
# before that file existed; empty when DIR holds no etcd yet.
stored_members() {
  if [[ -f "$DIR/etcd-members" ]]; then
    cat "$DIR/etcd-members"
  elif [[ -d "$DIR/etcd/member" ]]; then
    echo 1
  fi
}

# ---- etcd ------------------------------------------------------------------------------------
# Member N (1-based) is named ha-etcd (N=1, as with a single member) or ha-etcdN; its data
# directory, pid file and log in DIR are etcd, etcd.pid, etcd.log, or etcdN, etcdN.pid, etcdN.log.
member_suffix() { [[ $1 -eq 1 ]] || echo "$1"; }
member_name() { echo "ha-etcd$(member_suffix "$1")"; }
member_file() { echo "$DIR/etcd$(member_suffix "$1")"; }

# "ha-etcd=http://127.0.0.1:PEER,..." for --initial-cluster.
initial_cluster() {
  local n out=""
  for ((n = 1; n <= ETCD_MEMBERS; n++)); do
    out+="${out:+,}$(member_name "$n")=http://127.0.0.1:$(port_of "peer$n")"
  done
  echo "$out"
}

# "127.0.0.1:CLIENT,..." for Patroni's etcd3 hosts.
etcd_hosts() {
  local n out=""
  for ((n = 1; n <= ETCD_MEMBERS; n++)); do out+="${out:+,}127.0.0.1:$(port_of "etcd$n")"; done
  echo "$out"
}

start_member() {
  local n=$1 name data state=new
  name=$(member_name "$n")
  data=$(member_file "$n")
  if pid_alive "$data.pid"; then
    log "$name already running (pid $(cat "$data.pid"))"
    return
  fi
  # A member with data rejoins the cluster it belongs to (etcd then ignores --initial-cluster).
  if compgen -G "$data/member/wal/*.wal" >/dev/null; then state=existing; fi
  log "starting $name on 127.0.0.1:$(port_of "etcd$n") ($state; log: $data.log)"
  mkdir -p "$data"
  chmod 700 "$data"
  # setsid and no inherited stdout: the cluster outlives this script, and a caller reading our
  # stdout through a pipe must see it close when we exit.
  setsid etcd --name "$name" --data-dir "$data" \
    --listen-client-urls "http://127.0.0.1:$(port_of "etcd$n")" \
    --advertise-client-urls "http://127.0.0.1:$(port_of "etcd$n")" \
    --listen-peer-urls "http://127.0.0.1:$(port_of "peer$n")" \
    --initial-advertise-peer-urls "http://127.0.0.1:$(port_of "peer$n")" \
    --initial-cluster "$(initial_cluster)" \
    --initial-cluster-state "$state" \
    --initial-cluster-token "$SCOPE" \
    </dev/null >>"$data.log" 2>&1 &
  echo $! >"$data.pid"
}

# Starts every member that is not running (all before waiting: a new member is healthy only
# once a quorum has formed), then waits until each one answers healthy.
start_etcd() {
  local n data tries
  for ((n = 1; n <= ETCD_MEMBERS; n++)); do start_member "$n"; done
  for ((n = 1; n <= ETCD_MEMBERS; n++)); do
    data=$(member_file "$n")
    tries=0
    until ETCDCTL_API=3 etcdctl --endpoints="http://127.0.0.1:$(port_of "etcd$n")" \
      --dial-timeout=1s endpoint health >/dev/null 2>&1; do
      tries=$((tries + 1))
      pid_alive "$data.pid" || {
        tail -n 20 "$data.log" >&2
        die "$(member_name "$n") exited (log: $data.log)"
      }
      [[ $tries -lt 60 ]] || die "$(member_name "$n") did not become healthy (log: $data.log)"
      sleep 0.5
    done
  done
}

# ---- Patroni ---------------------------------------------------------------------------------
# One YAML per node, rewritten at every `up` (the DCS part only matters at bootstrap; the
# synchronous settings are applied with edit-config afterwards, so --sync works on an existing
# cluster too).
write_config() {
  local i=$1 node=${NODES[$1]} nd="$DIR/${NODES[$1]}" sync strict
  sync=$([[ $SYNC == off ]] && echo false || echo true)
  strict=$([[ $SYNC == strict ]] && echo true || echo false)
  cat >"$nd/patroni.yml" <<EOF
# Written by scripts/ha-cluster.sh; rewritten at every 'up'.
scope: $SCOPE
namespace: /exchange/
name: $node
log:
  level: INFO
restapi:
  listen: 127.0.0.1:$(port_of api$((i + 1)))
  connect_address: 127.0.0.1:$(port_of api$((i + 1)))
etcd3:
  hosts: $(etcd_hosts)
bootstrap:
  dcs:
    # Fast failure detection for a local cluster: the leader key lives 10 s, Patroni wakes every
    # second. primary_start_timeout 0: a crashed primary is failed over at once rather than
    # restarted in place (restarting would also lose nothing, but would not be a failover).
    ttl: 10
    loop_wait: 1
    retry_timeout: 4
    primary_start_timeout: 0
    maximum_lag_on_failover: 1048576
    synchronous_mode: $sync
    synchronous_mode_strict: $strict
    synchronous_node_count: 1
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        # A small footprint: two instances share a busy 2-core machine.
        max_connections: 100
        shared_buffers: 64MB
        wal_level: replica
        hot_standby: 'on'
        max_wal_senders: 5
        max_replication_slots: 5
        wal_keep_size: 128MB
        # pg_rewind needs it to bring a failed primary back as a standby.
        wal_log_hints: 'on'
        # The defaults, spelled out: a commit waits for the local flush and, in synchronous
        # mode, for the standby's flush.
        fsync: 'on'
        synchronous_commit: 'on'
  initdb:
  - encoding: UTF8
  - locale: C
postgresql:
  listen: 127.0.0.1:$(port_of pg$((i + 1)))
  connect_address: 127.0.0.1:$(port_of pg$((i + 1)))
  data_dir: $nd/data
  bin_dir: $PG_BIN
  pgpass: $nd/pgpass
  authentication:
    superuser:
      username: $PG_USER
      password: ha-local
    replication:
      username: replicator
      password: ha-local
    rewind:
      username: $PG_USER
      password: ha-local
  parameters:
    # The socket inside the node's directory: never collides with /var/run/postgresql.
    unix_socket_directories: '$nd'
    logging_collector: 'on'
    log_directory: '$nd/pglog'
  # Trust on loopback only, like local-pg.sh.
  pg_hba:
  - local all all trust
  - host all all 127.0.0.1/32 trust
  - host replication replicator 127.0.0.1/32 trust
watchdog:
  mode: 'off'
EOF
}

start_node() {
  local i=$1 node=${NODES[$1]} nd="$DIR/${NODES[$1]}"
  if pid_alive "$nd/patroni.pid"; then
    log "$node: Patroni already running (pid $(cat "$nd/patroni.pid"))"
    return
  fi
  log "$node: starting Patroni, PostgreSQL on 127.0.0.1:$(port_of pg$((i + 1))) (log: $nd/patroni.log)"
  # The pid file is written by the shell that becomes Patroni (runuser forks), so `down` signals
  # Patroni itself.
  if [[ $EUID -eq 0 ]]; then
    setsid runuser -u "$PG_USER" -- sh -c 'cd / && echo $$ >"$1" && exec patroni "$2"' sh \
      "$nd/patroni.pid" "$nd/patroni.yml" </dev/null >>"$nd/patroni.log" 2>&1 &
  else
    setsid sh -c 'echo $$ >"$1" && exec patroni "$2"' sh "$nd/patroni.pid" "$nd/patroni.yml" \
      </dev/null >>"$nd/patroni.log" 2>&1 &
  fi
  local tries=0
  until [[ -s "$nd/patroni.pid" ]]; do
    tries=$((tries + 1))
    [[ $tries -lt 50 ]] || die "$node: Patroni did not start (log: $nd/patroni.log)"
    sleep 0.1
  done
}

# GET /cluster from whichever node's REST API answers; empty when none does.
cluster_json() {
  local api
  for api in "$(port_of api1)" "$(port_of api2)"; do
    if curl -fsS --max-time 2 "http://127.0.0.1:$api/cluster" 2>/dev/null; then return 0; fi
  done
  return 0
}

# "name role state port" per member, from /cluster.
members() {
  cluster_json | python3 -c '
import json, sys
text = sys.stdin.read()
if text.strip():
    for m in json.loads(text).get("members", []):
        print(m.get("name"), m.get("role"), m.get("state"), m.get("port"))
'
}

prepare_node_dir() {
  local nd=$1
  mkdir -p "$nd"
  if [[ $EUID -eq 0 ]]; then chown "$PG_USER:" "$nd"; fi
  chmod 700 "$nd"
  touch "$nd/patroni.log"
  if [[ $EUID -eq 0 ]]; then chown "$PG_USER:" "$nd/patroni.log"; fi
}

cmd_up() {
  ensure_packages
  [[ -x "$PG_BIN/postgres" ]] || skip "PostgreSQL 15 is not installed at $PG_BIN"
  if [[ $EUID -eq 0 ]] && ! id "$PG_USER" >/dev/null 2>&1; then
    skip "running as root needs the '$PG_USER' system user (it comes with postgresql-15)"
  fi
  command -v curl >/dev/null || skip "curl is missing"
  if [[ "$DIR" != "$REQ_DIR" ]]; then log "the $PG_USER user cannot reach $REQ_DIR; using $DIR"; fi
  mkdir -p "$DIR"
  [[ ! -L "$DIR" ]] || die "$DIR is a symlink; refusing"
  if [[ -f "$DIR/ports" && "$(cat "$DIR/ports")" != "$BASE" ]]; then
    local how="run 'down' first"
    if ((ETCD_MEMBERS > 1)); then how="its etcd members know them: 'destroy' it"; fi
    die "the cluster in $DIR uses ports from $(cat "$DIR/ports"); $how or use them"
  fi
  local stored
  stored=$(stored_members)
  if [[ -n $stored && $stored != "$ETCD_MEMBERS" ]]; then
    die "$DIR holds a $stored-member etcd; 'destroy' it to get $ETCD_MEMBERS"
  fi
  echo "$BASE" >"$DIR/ports"
  echo "$ETCD_MEMBERS" >"$DIR/etcd-members"

  start_etcd
  local i
  for i in 0 1; do
    prepare_node_dir "$DIR/${NODES[$i]}"
    write_config "$i"
    if [[ $EUID -eq 0 ]]; then chown "$PG_USER:" "$DIR/${NODES[$i]}/patroni.yml"; fi
    start_node "$i"
  done

  log "waiting for a leader and a $([[ $SYNC == off ]] && echo streaming || echo synchronous) standby (sync: $SYNC)"
  local started=$SECONDS leader="" standby="" configured=0 m name role state port
  while :; do
    leader="" standby=""
    while read -r name role state port; do
      [[ -n "$name" ]] || continue
      if [[ $role == leader && $state == running ]]; then leader="$name:$port"; fi
      if [[ $SYNC != off && $role == sync_standby ]] ||
        [[ $SYNC == off && $role == replica && ($state == streaming || $state == running) ]]; then
        standby="$name:$port"
      fi
    done < <(members)
    # Once there is a leader the DCS exists: make its synchronous settings what was asked for.
    if [[ -n $leader && $configured -eq 0 ]]; then
      local sync_bool strict_bool
      sync_bool=$([[ $SYNC == off ]] && echo false || echo true)
      strict_bool=$([[ $SYNC == strict ]] && echo true || echo false)
      as_owner patronictl -c "$DIR/node1/patroni.yml" edit-config --force --quiet \
        -s "synchronous_mode=$sync_bool" -s "synchronous_mode_strict=$strict_bool" \
        >/dev/null 2>&1 || log "edit-config failed; keeping the DCS settings"
      configured=1
    fi
    if [[ -n $leader && -n $standby ]]; then break; fi
    for i in 0 1; do
      pid_alive "$DIR/${NODES[$i]}/patroni.pid" || {
        tail -n 30 "$DIR/${NODES[$i]}/patroni.log" >&2
        die "${NODES[$i]}: Patroni exited (log: $DIR/${NODES[$i]}/patroni.log)"
      }
    done
    if ((SECONDS - started > UP_TIMEOUT_S)); then
      as_owner patronictl -c "$DIR/node1/patroni.yml" list >&2 || true
      die "no leader with a standby after ${UP_TIMEOUT_S} s (logs: $DIR/node*/patroni.log)"
    fi
    if (((SECONDS - started) % 10 == 9)); then
      log "still waiting ($((SECONDS - started)) s): leader '${leader:-none}', standby '${standby:-none}'"
    fi
    sleep 1
  done
  log "leader ${leader%%:*} on port ${leader##*:}, standby ${standby%%:*} on port ${standby##*:} ($((SECONDS - started)) s)"

  local psql=("$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "${leader##*:}" -U "$PG_USER" -d postgres)
  if [[ "$("${psql[@]}" -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB_NAME'")" != 1 ]]; then
    log "creating database $DB_NAME"
    "${psql[@]}" -c "CREATE DATABASE $DB_NAME"
  fi
  url
}

# "ha-etcd leader, ha-etcd2 follower, ha-etcd3 down": each member as it answers.
etcd_summary() {
  local n out="" role
  for ((n = 1; n <= ETCD_MEMBERS; n++)); do
    role=$(ETCDCTL_API=3 etcdctl --endpoints="http://127.0.0.1:$(port_of "etcd$n")" \
      --dial-timeout=1s --command-timeout=2s endpoint status -w json 2>/dev/null |
      python3 -c '
import json, sys
try:
    s = json.load(sys.stdin)[0]["Status"]
    print("leader" if s["header"]["member_id"] == s["leader"] else "follower")
except (ValueError, LookupError, TypeError):
    print("down")
' 2>/dev/null) || role=down
    out+="${out:+, }$(member_name "$n") ${role:-down}"
  done
  echo "$out"
}

cmd_status() {
  if ! pid_alive "$DIR/node1/patroni.pid" && ! pid_alive "$DIR/node2/patroni.pid"; then
    log "not running ($DIR)"
    return 3
  fi
  log "etcd: $(etcd_summary)"
  as_owner patronictl -c "$DIR/node1/patroni.yml" list
}

cmd_kill_leader() {
  local name role state port leader=""
  while read -r name role state port; do
    if [[ $role == leader ]]; then leader=$name; fi
  done < <(members)
  [[ -n $leader ]] || die "no leader to kill"
  local pidfile="$DIR/$leader/data/postmaster.pid" pid
  [[ -f "$pidfile" ]] || die "$leader: no $pidfile"
  pid=$(head -n 1 "$pidfile")
  # The postmaster only: its backends notice its death and exit, Patroni (primary_start_timeout
  # 0) sees PostgreSQL gone and hands over to the synchronous standby, as after a crash.
  log "killing the postmaster of $leader (pid $pid) with SIGKILL"
  kill -KILL "$pid"
  printf '%s\n' "$leader"
}

# SIGTERM and wait up to $2 seconds, then SIGKILL.
stop_pid() {
  local pidfile=$1 grace=$2 what=$3 pid i
  pid_alive "$pidfile" || {
    rm -f "$pidfile"
    return 0
  }
  pid=$(cat "$pidfile")
  log "stopping $what (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < grace * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "$what did not stop in ${grace} s; SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    sleep 0.2
  fi
  rm -f "$pidfile"
}

cmd_down() {
  local i nd pm
  # Patroni stops its PostgreSQL on SIGTERM (a fast shutdown).
  for i in 0 1; do stop_pid "$DIR/${NODES[$i]}/patroni.pid" 40 "${NODES[$i]}'s Patroni"; done
  # A postmaster that outlived its Patroni (Patroni killed, or it gave up): stop it directly.
  for i in 0 1; do
    nd="$DIR/${NODES[$i]}"
    if [[ -f "$nd/data/postmaster.pid" ]]; then
      pm=$(head -n 1 "$nd/data/postmaster.pid")
      if kill -0 "$pm" 2>/dev/null; then
        log "${NODES[$i]}: stopping the postmaster Patroni left behind (pid $pm)"
        as_owner "$PG_BIN/pg_ctl" stop -D "$nd/data" -m immediate -w >&2 || kill -KILL "$pm" || true
      fi
    fi
  done
  local n
  for n in 1 2 3; do stop_pid "$(member_file "$n").pid" 20 "$(member_name "$n")"; done
  # A 3-member etcd keeps its ports: its members' peer URLs are in their data.
  if ((ETCD_MEMBERS == 1)); then rm -f "$DIR/ports"; fi
  log "stopped ($DIR)"
}

cmd_destroy() {
  cmd_down
  [[ -d "$DIR" ]] || return 0
  # Only what looks like ours: a typo in DIR must not wipe a source tree.
  local entry
  for entry in "$DIR"/* "$DIR"/.[!.]*; do
    [[ -e "$entry" ]] || continue
    case $(basename "$entry") in
      etcd | etcd[23] | etcd.log | etcd[23].log | etcd.pid | etcd[23].pid | etcd-members) ;;
      node1 | node2 | ports) ;;
      *) die "$DIR holds $(basename "$entry"), which is not ours; not deleting it" ;;
    esac
  done
  log "removing $DIR"
  rm -rf -- "$DIR"
}

# ---- arguments -------------------------------------------------------------------------------
[[ $# -ge 1 ]] || usage
command=$1
shift
SYNC=${HA_SYNC:-on}
BASE=${HA_PORT_BASE:-25500}
ports_given=0
ETCD_MEMBERS=""
positional=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --sync)
      [[ $# -ge 2 ]] || usage
      SYNC=$2
      shift 2
      ;;
    --ports)
      [[ $# -ge 2 ]] || usage
      BASE=$2
      ports_given=1
      shift 2
      ;;
    --etcd-members)
      [[ $# -ge 2 ]] || usage
      ETCD_MEMBERS=$2
      shift 2
      ;;
    -h | --help) usage ;;
    -*) usage ;;
    *)
      positional+=("$1")
      shift
      ;;
  esac
done
[[ ${#positional[@]} -le 1 ]] || usage
[[ $SYNC =~ ^(on|strict|off)$ ]] || die "--sync must be on, strict or off, got '$SYNC'"
[[ $BASE =~ ^[0-9]+$ ]] && ((BASE >= 1024 && BASE + 21 < 32768)) ||
  die "--ports must be a number in 1024..32746, got '$BASE'"
REQ_DIR=$(realpath -m -- "${positional[0]:-$ROOT/.local/ha}")
[[ "$REQ_DIR" != / ]] || die "DIR must not be /"
DIR=$(resolve_dir "$REQ_DIR")
if [[ $ports_given -eq 0 ]]; then load_ports; fi
[[ -z $ETCD_MEMBERS || $ETCD_MEMBERS =~ ^[13]$ ]] ||
  die "--etcd-members must be 1 or 3, got '$ETCD_MEMBERS'"
ETCD_MEMBERS=${ETCD_MEMBERS:-$(stored_members)}
ETCD_MEMBERS=${ETCD_MEMBERS:-1}

case $command in
  up) cmd_up ;;
  status) cmd_status ;;
  kill-leader) cmd_kill_leader ;;
  url) url ;;
  down) cmd_down ;;
  destroy) cmd_destroy ;;
  *) usage ;;
esac
