#!/usr/bin/env python3
"""Faults together: a seeded random schedule of faults against the whole HA stack under load,
with every client operation recorded and the history checked afterwards (issue 41).

    scripts/chaos.py --seed N --minutes M [--clients 8] [--out DIR] [--build-dir build]
                     [--port-base 25700]

Brings up on this machine, and stops at the end (also on Ctrl-C), everything it needs:
  - the Patroni PostgreSQL pair with a 3-member etcd (scripts/ha-cluster.sh --etcd-members 3,
    synchronous, in .local/chaos-ha, ports 25700+; with another --port-base P, in
    .local/chaos-ha-P, ports P+, so two runs can coexist);
  - two exchange servers, one active and one --standby, each reaching both PostgreSQL nodes
    through relays of its own (scripts/chaos_proxy.py) that the nemesis can cut or silence
    (their ports from P+30 to P+99);
  - clients (scripts/chaos_clients.py) trading through --servers-like failover, half one-shot,
    half persistent sessions, recording every operation.
The nemesis draws its schedule from the seed (the same seed gives the same schedule: kinds,
moments, durations; the process a fault hits is whichever holds the role then) and injects, now
and then two at once: kill -9 of the active exchange, of the standby, of the PostgreSQL primary,
of one etcd member (which one is drawn from the seed too; the other two keep the quorum, and when
the one killed was the etcd leader they elect another); SIGSTOP of the active exchange for
1-10 s; the active exchange's database links cut or made silent. A killed exchange is restarted
as the standby a few seconds later, a killed etcd member after the fault's duration (it rejoins
with its data). Every fault and heal is in the history with its time.

A pause of the active exchange past its lease is also a probe of the paused old leader's reads:
a scheduled pause-active of 5 s or more (the servers' 3 s lease and a margin, PROBE_MIN_PAUSE_S:
--plan-only marks them "probed"), and after the schedule one more pause, pause-probe (not drawn
from the seed: no seed's schedule changes), that lasts until the standby has taken over. Once
the new leader has acknowledged a fill, <query> requests for the filled orders are written to
the paused server (its kernel buffers them), it is resumed and answers them at once: refused or
fresh, never stale (class Prober; the checker's stale-read judges them, and its report counts
them: "probe queries: ...").

Then everything heals, the stack settles, the final state is read from the tables and queried
through the protocol (every order, by its account), the whole journal is replayed by the
engine's own rules (exchange-replay: its replies and the state it ends in), and
scripts/chaos_check.py checks the history, the reads and the tables against all of it. Output:
faults by kind, probes, operations by outcome, takeovers and promotions with their times,
anomalies, the seed. Exit 0 with no anomaly, 1 with some, 2 if the stack could not be brought
up, 77 if Patroni or etcd cannot be installed here.
"""
import argparse
import collections
import hashlib
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import harness
from chaos_clients import CONNECT_TIMEOUT_S, Client, History, Sent, classify, tagged
from chaos_proxy import Relay
from harness import ROOT, Server, http_get

HA = os.path.join(ROOT, "scripts", "ha-cluster.sh")
PORT_BASE = 25700  # --port-base: ha-cluster.sh's BASE (etcd BASE-BASE+5, Patroni +10/11, PG +20/21)
ETCD_MEMBERS = 3
SYMBOLS = ["S1", "S2", "S3"]
# The servers' flags: a short lease so a paused server is replaced within the run; the whole
# journal kept (the checker replays it from the start).
SERVER_FLAGS = ["--lease-ms", "3000", "--db-timeout-ms", "3000", "--journal-keep", "0",
                "--db-wait", "120", "--writer-lock-wait-ms", "500"]

FAULTS = ["kill-active", "kill-standby", "kill-pg-primary", "kill-etcd", "pause-active",
          "cut-db-link", "silent-db-link"]

# The probe (class Prober): a pause of the active server long enough for the standby to take over
# (its lease, plus a margin for the standby's check, the takeover and a fill) is also a probe of
# the paused old leader's reads. A scheduled pause-active at least that long is one; and after
# the schedule, one more pause (the kind pause-probe, not drawn from the seed, so no seed's
# schedule changes) lasts until the standby has taken over and acknowledged a fill.
LEASE_S = int(SERVER_FLAGS[SERVER_FLAGS.index("--lease-ms") + 1]) / 1000
PROBE_MARGIN_S = 2.0
PROBE_MIN_PAUSE_S = LEASE_S + PROBE_MARGIN_S
PROBE_WAIT_S = 30.0          # the closing probe's bound on the takeover and the fill
PROBE_REQUEST_TIMEOUT_S = 5.0   # each of the probe's requests to the new leader
PROBE_REPLY_TIMEOUT_S = 10.0    # the resumed old leader's replies, all together
PROBE_SELLER, PROBE_BUYER = "9000", "9001"   # the probe's accounts (clients have 1000 up)
PROBE_SYMBOL = "P1"          # the probe's own book: no client order ever fills its orders
PROBE_PRICE = 100
PROBE_RESTING = 10000        # shares of the seller's resting sell; each probe buys 1-3 of them
PROBE_CLIENT_ACCOUNTS = 4    # client accounts queried too, if the new leader acknowledged theirs
PROBE_COPIES = 3             # connections each query is written on: the resumed server's
                             # threads race its discovery that the lease ran out several times


def log(msg):
    print(f"chaos: {msg}", file=sys.stderr, flush=True)


# ---- the schedule -----------------------------------------------------------------------------

def etcd_target(seed, index):
    """The etcd member (1-3) that fault number `index` of the schedule kills, if a kill-etcd:
    drawn from the seed and the index alone, so the schedule itself is what it always was."""
    return random.Random(f"{seed}/etcd/{index}").randint(1, ETCD_MEMBERS)


def schedule(seed, seconds):
    """[(at seconds from the start, fault kind, duration seconds)], drawn from `seed` alone.
    Faults come every 5-12 s; one time in five a second one comes at the same moment."""
    rng = random.Random(seed)
    out, t = [], 5.0
    while t < seconds - 5:
        for _ in range(2 if rng.random() < 0.2 else 1):
            kind = rng.choice(FAULTS)
            duration = rng.uniform(1, 10) if kind == "pause-active" else rng.uniform(1, 6)
            out.append((round(t, 2), kind, round(duration, 2)))
        t += rng.uniform(5, 12)
    return out


# ---- the stack --------------------------------------------------------------------------------

class PortRange:
    """The exchanges' and relays' ports: BASE+30 to BASE+99 (ha-cluster.sh takes BASE to
    BASE+21), so that --port-base moves every port of a run; each one free when taken."""

    FIRST, LAST = 30, 99

    def __init__(self, base):
        self.next, self.last = base + self.FIRST, base + self.LAST

    def take(self):
        while self.next <= self.last:
            port, self.next = self.next, self.next + 1
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                try:
                    s.bind(("127.0.0.1", port))
                    return port
                except OSError:
                    continue
        raise RuntimeError(f"no free port left up to {self.last}")


class Exchange:
    """One exchange server with its two relays to the PostgreSQL nodes."""

    def __init__(self, name, binary, out_dir, pg_url_template, pg_ports, ports):
        self.name = name
        self.relays = [Relay(ports.take(), pg).start() for pg in pg_ports]
        db = pg_url_template.format(*[r.listen_port for r in self.relays])
        self.server = Server(binary, db, ports.take(), ports.take(),
                             log=os.path.join(out_dir, f"{name}.log"))
        self.paused = False
        # The nemesis's heals, the watcher's supervision and the final heal may all restart it.
        self.restarting = threading.Lock()

    @property
    def port(self):
        return self.server.port

    def start(self, standby, reset=False):
        self.server.start(*SERVER_FLAGS, *(["--standby"] if standby else []),
                          *(["--reset"] if reset else []), new_session=True)

    def role(self):
        """"active", "standby", "down" or "unknown" (paused, or not answering)."""
        if not self.server.alive():
            return "down"
        if self.paused:
            return "unknown"
        status, body = self.server.healthz(timeout=0.5)
        if status == 200:
            return "active"
        return "standby" if "standby" in body else "unknown"

    def links(self, mode):
        for r in self.relays:
            r.set_mode(mode)


class Stack:
    def __init__(self, args, out_dir, history):
        self.args, self.out_dir, self.history = args, out_dir, history
        self.base = args.port_base
        self.ha_dir = os.path.join(ROOT, ".local", "chaos-ha" if self.base == PORT_BASE
                                   else f"chaos-ha-{self.base}")
        self.pg_ports = (self.base + 20, self.base + 21)
        self.api_ports = (self.base + 10, self.base + 11)
        # Member n's etcd client port (its peer port is the next one).
        self.etcd_ports = {n: self.base + 2 * (n - 1) for n in range(1, ETCD_MEMBERS + 1)}
        self.exchanges = []
        self.url = None

    def real_ha_dir(self):
        """Where ha-cluster.sh keeps the cluster: ha_dir, or its /tmp fallback when the postgres
        user cannot reach ha_dir (resolve_dir in the script)."""
        fallback = "/tmp/exchange-ha-" + hashlib.sha256(self.ha_dir.encode()).hexdigest()[:16]
        if os.path.isdir(fallback) and not os.path.isdir(os.path.join(self.ha_dir, "node1")):
            return fallback
        return self.ha_dir

    def up(self):
        try:  # a cluster left by a run from before the 3-member etcd: its data is disposable
            with open(os.path.join(self.real_ha_dir(), "etcd-members")) as f:
                members = f.read().strip()
        except OSError:
            members = "1" if os.path.isdir(os.path.join(self.real_ha_dir(), "etcd")) else None
        if members not in (None, str(ETCD_MEMBERS)):
            log(f"{self.ha_dir} holds a {members}-member etcd: destroying it")
            self.ha("destroy")
        log(f"bringing up the Patroni pair and {ETCD_MEMBERS} etcd members (scripts/ha-cluster.sh)")
        self.url = self.ha("up", "--sync", "on").strip().splitlines()[-1]
        pg = self.pg_ports
        template = self.url.replace(f":{pg[0]},", ":{0},").replace(f":{pg[1]}/", ":{1}/")
        binary = os.path.join(self.args.build_dir, "bin", "exchange-server")
        ports = PortRange(self.base)
        self.exchanges = [Exchange(n, binary, self.out_dir, template, pg, ports)
                          for n in ("a", "b")]
        a, b = self.exchanges
        a.start(standby=False, reset=True)  # a fresh exchange
        if not a.server.wait_listening(120):
            raise RuntimeError(f"the active server did not start: {a.server.log_tail()}")
        b.start(standby=True)
        if not b.server.wait_listening(120):
            raise RuntimeError(f"the standby did not start: {b.server.log_tail()}")

    def ha(self, command, *flags):
        """scripts/ha-cluster.sh COMMAND [FLAGS] on this run's cluster; its stdout."""
        ports = ["--ports", str(self.base)] if command in ("up", "url") else []
        if command == "up":
            ports += ["--etcd-members", str(ETCD_MEMBERS)]
        return subprocess.run([HA, command, *flags, *ports, self.ha_dir], check=True, text=True,
                              stdout=subprocess.PIPE).stdout

    def active(self):
        for x in self.exchanges:
            if x.role() == "active":
                return x
        return None

    def standby(self):
        for x in self.exchanges:
            if x.role() == "standby":
                return x
        return None

    def other(self, x):
        return next((e for e in self.exchanges if e is not x), None)

    def restart_etcd(self):
        """`ha-cluster.sh up` on a thread of its own (it restarts the etcd members that are down
        and waits for a leader); one at a time."""
        self.wait_etcd()
        self.etcd_thread = threading.Thread(target=self.ha, args=("up", "--sync", "on"),
                                            daemon=True)
        self.etcd_thread.start()

    def wait_etcd(self, seconds=300):
        thread = getattr(self, "etcd_thread", None)
        if thread is not None:
            thread.join(seconds)

    def etcd_pidfile(self, n):
        return os.path.join(self.real_ha_dir(), f"etcd{'' if n == 1 else n}.pid")

    def etcd_pid(self, n):
        """Member n's pid, or None when it is not running (its pid file gone)."""
        try:
            with open(self.etcd_pidfile(n)) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def etcd_role(self, n):
        """"the etcd leader" or "a follower" as member n says, or None if it does not answer."""
        try:
            done = subprocess.run(
                ["etcdctl", f"--endpoints=http://127.0.0.1:{self.etcd_ports[n]}",
                 "--dial-timeout=1s", "--command-timeout=2s", "endpoint", "status", "-w", "json"],
                env={**os.environ, "ETCDCTL_API": "3"}, text=True, capture_output=True, timeout=5)
            status = json.loads(done.stdout)[0]["Status"]
            leader = status["header"]["member_id"] == status["leader"]
            return "the etcd leader" if leader else "a follower"
        except (OSError, subprocess.SubprocessError, ValueError, LookupError, TypeError):
            return None

    def down(self):
        self.wait_etcd(60)
        for x in self.exchanges:
            if x.paused and x.server.alive():
                os.kill(x.server.pid, signal.SIGCONT)
            x.server.close(30)
            for r in x.relays:
                r.stop()
        try:
            self.ha("down")
        except subprocess.CalledProcessError as e:
            log(f"ha-cluster.sh down failed: {e}")


# ---- the probe: a paused old leader's reads ---------------------------------------------------

def probe_send(port, payload, timeout=CONNECT_TIMEOUT_S):
    """Connects to 127.0.0.1:port and writes one request on a connection of its own (its write
    side then shut), without waiting for the reply: the socket. The kernel accepts the connection
    and buffers the request even while the server is stopped. OSError if no connection was made
    (nothing sent); Sent if the write failed (whether it arrived is unknown)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        data = payload.encode()
        sock.sendall(str(len(data)).encode() + b"\n" + data)
        sock.shutdown(socket.SHUT_WR)
    except OSError as e:
        sock.close()
        raise Sent(f"sending failed: {e}")
    return sock


def probe_reply(sock, deadline):
    """The reply on a socket probe_send returned, read until the server closes the connection or
    the monotonic deadline passes (what came so far, then); None if nothing came."""
    chunks = []
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            sock.settimeout(left)
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError:
        pass
    finally:
        sock.close()
    return b"".join(chunks).decode(errors="replace") if chunks else None


OPENED_ID = re.compile(r'<opened [^>]*id="(\d+)"')
ORDER_IDS = re.compile(r'<(?:opened|status|canceled) [^>]*\bid="(\d+)"')


class Prober:
    """Probes a paused old leader's reads (the window of docs/DURABILITY.md, "The lease"). While
    the active server is stopped past its lease, it waits for the other server to take over and
    has it acknowledge a fill (a buy of the probe's buyer crossing the sell its seller placed
    before any fault, which the old leader knows without that fill), then writes <query>
    requests to the paused server, whose kernel buffers them: for both orders, and for client
    orders the new leader acknowledged since the pause began (from the history), each on
    PROBE_COPIES connections of its own. Then the server is resumed and handles them at once,
    racing its own discovery that its lease ran out: each must be refused or fresh. Every
    request is an op of the history ("client": "probe"); the queries to the paused server carry
    "probe": N, their invocation is when they were written, and scripts/chaos_check.py judges
    them with every other query (stale-read) and counts them."""

    def __init__(self, stack, history, stop):
        self.stack, self.history, self.stop_event = stack, history, stop
        self.ready = False   # the probe's accounts exist
        self.resting = None  # the seller's resting sell, once acknowledged
        self.lock = threading.Lock()
        self.begun = collections.Counter()     # pauses probed, by fault kind
        self.results = collections.Counter()   # "probed", or why not

    def setup(self, port):
        """The probe's accounts and its seller's resting sell, on the active server before any
        fault. Without the accounts no probe is made."""
        create = (f'<create><account id="{PROBE_SELLER}" balance="0"/>'
                  f'<account id="{PROBE_BUYER}" balance="1000000"/>'
                  f'<symbol sym="{PROBE_SYMBOL}"><account id="{PROBE_SELLER}">'
                  f'{2 * PROBE_RESTING}</account></symbol></create>')   # for a second sell
        outcome, reply = self.request(port, "", create, "create", 10)
        self.ready = outcome == "ok" and "<error" not in reply
        if self.ready:
            self.place_resting(port, 10)
        return self.ready

    def begin(self, kind):
        with self.lock:
            self.begun[kind] += 1
            return sum(self.begun.values())

    def record(self, op, payload, account, kind, invoke, outcome, reply, port, probe=None):
        entry = {"type": "op", "op": op, "client": "probe", "kind": kind, "account": account,
                 "payload": payload, "tag": f"op {op}", "invoke": invoke,
                 "complete": time.time(), "outcome": outcome, "reply": reply,
                 "server": f"127.0.0.1:{port}", "session": "one-shot"}
        if probe is not None:
            entry["probe"] = probe
        self.history.record(entry)

    def payload(self, account, body):
        op = self.history.next_op()
        root = f'<transactions id="{account}">{body}</transactions>' if account else body
        return op, tagged(root, f"op {op}")

    def request(self, port, account, body, kind, timeout):
        """One request of the probe's own to 127.0.0.1:port, recorded: (outcome, reply)."""
        op, payload = self.payload(account, body)
        invoke = time.time()
        try:
            sock = probe_send(port, payload, min(timeout, CONNECT_TIMEOUT_S))
        except Sent:
            outcome, reply = "unknown", None
        except OSError:
            outcome, reply = "failed", None
        else:
            reply = probe_reply(sock, time.monotonic() + timeout)
            outcome = classify(reply)[0] if reply is not None else "unknown"
        self.record(op, payload, account, kind, invoke, outcome, reply, port)
        return outcome, reply

    def until_ok(self, port, account, body, kind, ready_by):
        """The request, again after each refusal or loss, until one is answered (its reply) or
        the monotonic ready_by passes (None)."""
        while not self.stop_event.is_set():
            left = ready_by - time.monotonic()
            if left <= 0:
                return None
            outcome, reply = self.request(port, account, body, kind,
                                          max(0.5, min(PROBE_REQUEST_TIMEOUT_S, left)))
            if outcome == "ok":
                return reply
            self.stop_event.wait(0.2)
        return None

    def place_resting(self, port, timeout):
        outcome, reply = self.request(port, PROBE_SELLER,
                                      f'<order sym="{PROBE_SYMBOL}" amount="-{PROBE_RESTING}" '
                                      f'limit="{PROBE_PRICE}"/>', "order", timeout)
        m = OPENED_ID.search(reply or "") if outcome == "ok" else None
        if m:
            self.resting = int(m.group(1))

    def fill(self, y, number, ready_by):
        """Has y acknowledge a fill of the resting sell: the buyer's crossing buy, then the buy's
        <status> from y showing its execution (and the sell's <status>). The buy's id, or why
        there is none."""
        if self.resting is None:  # not placed before the faults: placed now (unknown to x)
            sell = f'<order sym="{PROBE_SYMBOL}" amount="-{PROBE_RESTING}" limit="{PROBE_PRICE}"/>'
            m = OPENED_ID.search(self.until_ok(y.port, PROBE_SELLER, sell, "order", ready_by) or "")
            if not m:
                return "the new leader acknowledged no resting sell in time"
            self.resting = int(m.group(1))
        buy = f'<order sym="{PROBE_SYMBOL}" amount="{1 + number % 3}" limit="{PROBE_PRICE}"/>'
        m = OPENED_ID.search(self.until_ok(y.port, PROBE_BUYER, buy, "order", ready_by) or "")
        if not m:
            return "the new leader acknowledged no buy in time"
        buy = int(m.group(1))
        status = self.until_ok(y.port, PROBE_BUYER, f'<query id="{buy}"/>', "query", ready_by)
        if status is None or "<executed" not in status:
            return "the new leader acknowledged no fill in time"
        self.until_ok(y.port, PROBE_SELLER, f'<query id="{self.resting}"/>', "query", ready_by)
        return buy

    def client_orders(self, y, since):
        """{account: [order ids]} of client operations y acknowledged since the wall-clock time
        `since` (orders they opened, showed or canceled; those that showed a fill first), for at
        most PROBE_CLIENT_ACCOUNTS accounts."""
        server = f"127.0.0.1:{y.port}"
        ops = [r for r in self.history.recent_ops()
               if isinstance(r.get("client"), int) and r["client"] >= 0 and r["outcome"] == "ok"
               and r.get("server") == server and r["invoke"] >= since and r.get("reply")]
        ops.sort(key=lambda r: "<executed" not in r["reply"])
        found = {}
        for r in ops:
            ids = [int(n) for n in ORDER_IDS.findall(r["reply"])]
            if not ids or (r["account"] not in found and len(found) >= PROBE_CLIENT_ACCOUNTS):
                continue
            mine = found.setdefault(r["account"], [])
            mine += [n for n in ids if n not in mine][:10 - len(mine)]
        return found

    def probe(self, x, y, number, since, ready_by):
        """While x stays paused, until the monotonic ready_by: waits for y to take over, has it
        acknowledge a fill, and writes the queries to x. The queries written [(socket or None,
        op, payload, account, invoke, outcome or None)], or why there are none."""
        if not self.ready:
            return "the probe has no accounts"
        if y is None:
            return "no other server"
        while (role := y.role()) != "active":
            if time.monotonic() >= ready_by or self.stop_event.is_set():
                return f"no takeover in time: the other server was {role}"
            self.stop_event.wait(0.1)
        buy = self.fill(y, number, ready_by)
        if isinstance(buy, str):
            return buy
        queries = {PROBE_SELLER: [self.resting], PROBE_BUYER: [buy],
                   **self.client_orders(y, since)}
        if not x.paused or not x.server.alive():
            return "the server was resumed before the queries were ready"
        written = []
        for account, ids in [q for q in queries.items() for _ in range(PROBE_COPIES)]:
            op, payload = self.payload(account, "".join(f'<query id="{n}"/>' for n in ids))
            invoke = time.time()
            try:
                written.append((probe_send(x.port, payload), op, payload, account, invoke, None))
            except Sent:
                written.append((None, op, payload, account, invoke, "unknown"))
            except OSError:
                written.append((None, op, payload, account, invoke, "failed"))
        return written

    def conclude(self, nemesis, kind, x, number, written):
        """After x was resumed: reads its replies to the queries written (all within
        PROBE_REPLY_TIMEOUT_S) and records each, or notes why there were none."""
        if isinstance(written, str):
            self.results[written] += 1
            return nemesis.note(kind, "probe", x.name, f"probe {number}: none sent ({written})")
        deadline = time.monotonic() + PROBE_REPLY_TIMEOUT_S
        outcomes = collections.Counter()
        for sock, op, payload, account, invoke, outcome in written:
            reply = probe_reply(sock, deadline) if sock is not None else None
            if sock is not None:
                outcome = classify(reply)[0] if reply is not None else "unknown"
            self.record(op, payload, account, "query", invoke, outcome, reply, x.port,
                        probe=number)
            outcomes["no reply" if outcome == "unknown" else outcome] += 1
        self.results["probed"] += 1
        nemesis.note(kind, "probe", x.name,
                     f"probe {number}: {len(written)} queries written while paused, after the "
                     f"resume: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))

    def scheduled(self, nemesis, x, duration):
        """A scheduled pause-active of PROBE_MIN_PAUSE_S or more, x already stopped: the probe
        within the pause, which keeps its scheduled duration (or ends at once on stop)."""
        number, start = self.begin("pause-active"), time.monotonic()
        deadline = start + duration
        written = self.probe(x, self.stack.other(x), number, time.time() - 0.001,
                             deadline - 0.3)
        while not self.stop_event.is_set() and time.monotonic() < deadline:
            self.stop_event.wait(min(0.1, max(0.0, deadline - time.monotonic())))
        Nemesis.resume(x)
        nemesis.note("pause-active", "heal", x.name)
        self.conclude(nemesis, "pause-active", x, number, written)

    def closing(self, nemesis):
        """After the schedule: a pause of the active server until the standby has taken over and
        acknowledged a fill (PROBE_WAIT_S at most), then the probe; then, as a supervisor would,
        the old leader, which steps down, is restarted as the standby."""
        s, waited = self.stack, time.monotonic() + 60
        while True:
            x, y = s.active(), s.standby()
            if x is not None and y is not None:
                break
            if self.stop_event.is_set():
                return
            if time.monotonic() > waited:
                return nemesis.skip("pause-probe", "no active and standby servers within 60 s")
            self.stop_event.wait(0.5)
        os.kill(x.server.pid, signal.SIGSTOP)
        x.paused = True
        start = time.monotonic()
        nemesis.count("pause-probe", x.name, "until the standby has taken over and acknowledged "
                                             "a fill, then probed")
        number = self.begin("pause-probe")
        written = self.probe(x, y, number, time.time() - 0.001, start + PROBE_WAIT_S)
        Nemesis.resume(x)
        nemesis.note("pause-probe", "heal", x.name, f"after {time.monotonic() - start:.2f} s")
        self.conclude(nemesis, "pause-probe", x, number, written)
        until = time.monotonic() + 15
        while x.server.alive() and time.monotonic() < until and y.role() == "active":
            self.stop_event.wait(0.2)
        if not x.server.alive():
            try:
                Nemesis.restart(x)
                nemesis.note("pause-probe", "restart", x.name,
                             "stepped down; restarted as the standby")
            except OSError as e:  # the watcher tries again
                nemesis.note("pause-probe", "restart-failed", x.name, str(e))


# ---- the nemesis ------------------------------------------------------------------------------

class Nemesis(threading.Thread):
    """Injects the schedule's faults at their moments and heals each after its duration; a
    pause-active of PROBE_MIN_PAUSE_S or more is also a probe (Prober), and after the schedule
    one more pause, pause-probe, is one."""

    def __init__(self, stack, plan, seed, history, started, stop, prober=None):
        super().__init__(daemon=True, name="nemesis")
        self.stack, self.plan, self.seed, self.history = stack, plan, seed, history
        self.started, self.stop_event = started, stop
        self.prober = prober
        self.heals = []  # (at monotonic, description, function)
        self.probes = []  # the threads of the scheduled pauses being probed
        self.lock = threading.Lock()
        self.injected, self.skipped = {}, {}
        self.etcd_leader_kills = 0

    def note(self, kind, action, target, detail=""):
        self.history.record({"type": "fault", "t": time.time(), "kind": kind, "action": action,
                             "target": target, "detail": detail})
        log(f"{action} {kind} {target} {detail}".rstrip())

    def run(self):
        for index, (at, kind, duration) in enumerate(self.plan):
            while not self.stop_event.is_set() and time.monotonic() < self.started + at:
                self.heal_due()
                self.stop_event.wait(0.1)
            if self.stop_event.is_set():
                break
            try:
                self.inject(kind, duration, index)
            except Exception as e:  # a fault that could not be injected is skipped, and said
                self.skip(kind, f"could not inject: {e}")
        # The schedule's heals and probes at their moments, then the closing probe.
        while not self.stop_event.is_set() and (self.heals
                                                 or any(t.is_alive() for t in self.probes)):
            self.heal_due()
            self.stop_event.wait(0.1)
        for t in self.probes:
            t.join()
        if self.prober is not None and not self.stop_event.is_set():
            try:
                self.prober.closing(self)
            except Exception as e:
                self.skip("pause-probe", f"could not inject: {e}")
        self.heal_all()

    def skip(self, kind, why):
        self.skipped[kind] = self.skipped.get(kind, 0) + 1
        self.note(kind, "skip", "-", why)

    def later(self, duration, kind, target, heal):
        with self.lock:
            self.heals.append((time.monotonic() + duration, kind, target, heal))

    def heal_due(self, everything=False):
        with self.lock:
            due = [h for h in self.heals if everything or h[0] <= time.monotonic()]
            self.heals = [h for h in self.heals if h not in due]
        for _, kind, target, heal in due:
            try:
                heal()
                self.note(kind, "heal", target)
            except Exception as e:
                self.note(kind, "heal-failed", target, str(e))

    def heal_all(self):
        self.heal_due(everything=True)

    def inject(self, kind, duration, index):
        s = self.stack
        if kind in ("kill-active", "kill-standby"):
            x = s.active() if kind == "kill-active" else s.standby()
            if x is None:
                return self.skip(kind, "no server in that role now")
            x.server.kill()
            self.count(kind, x.name)
            self.later(duration, "restart", x.name, lambda x=x: self.restart(x))
        elif kind == "pause-active":
            x = s.active()
            if x is None:
                return self.skip(kind, "no active server now")
            os.kill(x.server.pid, signal.SIGSTOP)
            x.paused = True
            probed = self.prober is not None and duration >= PROBE_MIN_PAUSE_S
            self.count(kind, x.name, f"for {duration} s" + (", probed" if probed else ""))
            if probed:  # the probe resumes it at the pause's end
                probe = threading.Thread(target=self.prober.scheduled, args=(self, x, duration),
                                         daemon=True, name="probe")
                self.probes.append(probe)
                probe.start()
            else:
                self.later(duration, kind, x.name, lambda x=x: self.resume(x))
        elif kind in ("cut-db-link", "silent-db-link"):
            x = s.active()
            if x is None:
                return self.skip(kind, "no active server now")
            x.links("cut" if kind == "cut-db-link" else "silent")
            self.count(kind, x.name, f"for {duration} s")
            self.later(duration, kind, x.name, lambda x=x: x.links("pass"))
        elif kind == "kill-pg-primary":
            s.ha("kill-leader")
            self.count(kind, "postgresql leader")
        elif kind == "kill-etcd":
            n = etcd_target(self.seed, index)
            pid = s.etcd_pid(n)
            if pid is None:
                return self.skip(kind, f"etcd{n} is not running")
            role = s.etcd_role(n)
            os.kill(pid, signal.SIGKILL)
            # Its parent may never reap it (it was started in the background by ha-cluster.sh,
            # which exited), and a zombie still answers kill -0: without its pid file, `up`
            # starts a new one.
            os.unlink(s.etcd_pidfile(n))
            if role == "the etcd leader":
                self.etcd_leader_kills += 1
            self.count(kind, f"etcd{n}", f"pid {pid}" + (f", {role}" if role else ""))
            # Restarted in the background: `up` waits for a leader, which may take a while.
            self.later(duration, kind, f"etcd{n}", lambda: s.restart_etcd())

    def count(self, kind, target, detail=""):
        self.injected[kind] = self.injected.get(kind, 0) + 1
        self.note(kind, "inject", target, detail)

    @staticmethod
    def restart(x):
        with x.restarting:
            if not x.server.alive():
                x.paused = False
                x.start(standby=True)

    @staticmethod
    def resume(x):
        if x.server.alive():
            os.kill(x.server.pid, signal.SIGCONT)
        x.paused = False


class Watcher(threading.Thread):
    """Records takeovers (which exchange is active) and promotions (which node Patroni leads),
    and, as a supervisor would, restarts as the standby an exchange that exited by itself (one
    that stepped down when another took over) once it has been down SUPERVISE_AFTER_S."""

    SUPERVISE_AFTER_S = 8.0  # longer than a kill's duration: the nemesis restarts its own

    def __init__(self, stack, history, stop):
        super().__init__(daemon=True, name="watcher")
        self.stack, self.history, self.stop_event = stack, history, stop
        self.events = []
        self.down_since = {}

    def supervise(self):
        for x in self.stack.exchanges:
            if x.server.alive():
                self.down_since.pop(x.name, None)
                continue
            since = self.down_since.setdefault(x.name, time.monotonic())
            if time.monotonic() - since >= self.SUPERVISE_AFTER_S:
                status = x.server.proc.returncode
                try:
                    Nemesis.restart(x)
                except OSError as e:  # e.g. the binary being replaced by a rebuild: again later
                    self.event("restart-failed", f"exchange {x.name} could not be restarted "
                                                 f"({e}); trying again in "
                                                 f"{self.SUPERVISE_AFTER_S:g} s")
                    self.down_since[x.name] = time.monotonic()
                    continue
                self.event("restart", f"exchange {x.name} exited "
                           f"(status {status}); restarted as the standby")
                self.down_since.pop(x.name, None)

    def run(self):
        active, leader = None, None
        while not self.stop_event.wait(0.5):
            self.supervise()
            now = self.stack.active()
            name = now.name if now else None
            if name and name != active:
                self.event("takeover" if active else "active", f"exchange {name} serves")
                active = name
            node = self.patroni_leader()
            if node and node != leader:
                self.event("promotion" if leader else "leader", f"PostgreSQL {node} leads")
                leader = node

    def event(self, what, detail):
        entry = {"type": "event", "t": time.time(), "what": what, "detail": detail}
        self.events.append(entry)
        self.history.record(entry)
        log(f"{what}: {detail}")

    def patroni_leader(self):
        for i, port in enumerate(self.stack.api_ports):
            try:
                status, body = http_get(port, "/", timeout=0.5)
                if json.loads(body).get("role") in ("master", "primary"):
                    return f"node{i + 1}"
            except (OSError, ValueError):
                continue
        return None


# ---- the run ----------------------------------------------------------------------------------

def create_accounts(stack, history, clients):
    """Each client's two accounts with cash, and shares of every symbol for each: one <create>,
    recorded as an operation like the others (its journal entry carries its tag)."""
    from chaos_clients import tagged, classify  # noqa: E402
    import wire  # noqa: E402
    accounts = [[str(1000 + 2 * i), str(1001 + 2 * i)] for i in range(clients)]
    flat = [a for pair in accounts for a in pair]
    children = "".join(f'<account id="{a}" balance="1000000"/>' for a in flat)
    children += "".join(f'<symbol sym="{s}">' + "".join(f'<account id="{a}">1000</account>'
                                                       for a in flat) + "</symbol>"
                        for s in SYMBOLS)
    op = history.next_op()
    payload = tagged(f"<create>{children}</create>", f"op {op}")
    invoke = time.time()
    reply = wire.request(stack.exchanges[0].port, payload)
    outcome, _ = classify(reply)
    history.record({"type": "op", "op": op, "client": -1, "kind": "create", "account": "",
                    "payload": payload, "tag": f"op {op}", "invoke": invoke,
                    "complete": time.time(), "outcome": outcome, "reply": reply,
                    "server": f"127.0.0.1:{stack.exchanges[0].port}", "session": "one-shot"})
    if outcome != "ok" or "<error" in reply:
        raise RuntimeError(f"creating the accounts failed: {reply[:300]}")
    return accounts


def settle(stack, seconds=180):
    """Waits until an exchange serves and the projection holds the whole journal."""
    deadline = time.monotonic() + seconds
    pg = harness.Postgres(stack.url)
    while time.monotonic() < deadline:
        try:
            if stack.active() and pg.query(
                    "SELECT (SELECT seq FROM projection_position) >= "
                    "(SELECT coalesce(max(seq), 0) FROM journal)") == "t":
                return True
        except RuntimeError:
            pass
        time.sleep(0.5)
    return False


FINAL_SQL = {
    "journal": "SELECT seq, at, request FROM journal ORDER BY seq",
    "orders": "SELECT id, account_id, symbol, amount::text, limit_price::text, open_amount::text, "
              "created_at, canceled_at, execution_ids, stop_price::text, coalesce(priority, id) AS priority "
              "FROM orders ORDER BY id",
    "executions": "SELECT id, buy_order, sell_order, shares::text, price::text, executed_at "
                  "FROM executions ORDER BY id",
    "accounts": "SELECT id, balance::text, deposited::text FROM accounts ORDER BY id",
    "positions": "SELECT account_id, symbol, amount::text, granted::text FROM positions "
                 "ORDER BY account_id, symbol",
}


def final_state(stack, out_dir):
    """The tables and the whole journal, from the primary (or, if none is writable, whichever
    node answers: the check then says what it finds)."""
    pg = harness.Postgres(stack.url)
    try:
        pg.query("SELECT 1")
    except RuntimeError:
        pg = harness.Postgres(stack.url.replace("target_session_attrs=read-write",
                                                "target_session_attrs=any"))
    final = {}
    for name, sql in FINAL_SQL.items():
        final[name] = json.loads(pg.query(f"SELECT coalesce(json_agg(t), '[]') FROM ({sql}) t"))
    final["symbols"] = [s for s in pg.query("SELECT sym FROM symbols ORDER BY sym").split("\n") if s]
    with open(os.path.join(out_dir, "final.json"), "w") as f:
        json.dump(final, f)
    return final


QUERY_BATCH = 50  # <query> children a request


def final_queries(stack, final, out_dir):
    """Every order in the tables queried through the protocol by its account, the replies in
    queries.json (chaos_check_state.py compares each <status> with its row)."""
    by_account = {}
    for order in final["orders"]:
        by_account.setdefault(order["account_id"], []).append(order["id"])
    replies = []
    for account, ids in sorted(by_account.items()):
        for i in range(0, len(ids), QUERY_BATCH):
            queries = "".join(f'<query id="{n}"/>' for n in ids[i:i + QUERY_BATCH])
            replies.append(query_active(stack, f'<transactions id="{account}">{queries}'
                                               "</transactions>"))
    with open(os.path.join(out_dir, "queries.json"), "w") as f:
        json.dump({"replies": [r for r in replies if r is not None]}, f)
    log(f"queried {len(final['orders'])} orders through the protocol")


def query_active(stack, payload, attempts=3):
    """The active exchange's reply to a read-only request, or None if none answered."""
    import wire  # noqa: E402
    for _ in range(attempts):
        x = stack.active()
        if x is not None:
            try:
                return wire.request(x.port, payload)
            except OSError as e:
                log(f"a final query failed ({e}); trying again")
        time.sleep(1)
    return None


def replayed(args, stack, final, out_dir):
    """The engine's own replies to the journal replayed in order (exchange-replay), by tag, in
    replayed.json, and the state it ends in, in replayed_state.json; why the replay failed, or
    None."""
    import re  # noqa: E402
    binary = os.path.join(args.build_dir, "bin", "exchange-replay")
    if not os.path.exists(binary):
        log(f"{binary} is missing: the replies are not replayed")
        return
    done = subprocess.run([binary, "--db", stack.url, "--final-state",
                           os.path.join(out_dir, "replayed_state.json")],
                          text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if done.returncode != 0:
        # A journal the engine cannot replay (a divergence, a gap) is an anomaly in itself.
        return f"exchange-replay failed (status {done.returncode}): {done.stderr.strip()}"
    tags = {e["seq"]: re.search(r"<!--(op \d+)-->", e["request"]) for e in final["journal"]}
    out = {}
    for line in done.stdout.splitlines():
        r = json.loads(line)
        tag = tags.get(r["seq"])
        if tag:
            out[tag.group(1)] = r["reply"]
    with open(os.path.join(out_dir, "replayed.json"), "w") as f:
        json.dump(out, f)
    return None


def heal_everything(stack, nemesis):
    nemesis.heal_all()
    for x in stack.exchanges:
        if x.paused:
            Nemesis.resume(x)
        x.links("pass")
        Nemesis.restart(x)
    stack.wait_etcd()
    if any(stack.etcd_pid(n) is None for n in stack.etcd_ports):
        stack.ha("up", "--sync", "on")


def summary(args, plan, nemesis, clients, report):
    """The run in a few lines, then the checker's report (operations by outcome, faults,
    takeovers and promotions with their times, each anomaly, "anomalies: N")."""
    print(f"seed {args.seed}, {args.minutes} min, {len(clients)} clients "
          f"({sum(c.ops for c in clients)} operations), output in {args.out}")
    injected = sum(nemesis.injected.values())
    print(f"faults: {len(plan)} scheduled and a closing pause-probe, {injected} injected of "
          f"{len(nemesis.injected)} kinds ("
          + ", ".join(f"{k} {v}" for k, v in sorted(nemesis.injected.items())) + ")"
          + ("; skipped (no process in that role then): "
             + ", ".join(f"{k} {v}" for k, v in sorted(nemesis.skipped.items()))
             if nemesis.skipped else "")
          + (f"; kill-etcd on the etcd leader: {nemesis.etcd_leader_kills} of "
             f"{nemesis.injected['kill-etcd']}" if nemesis.injected.get("kill-etcd") else ""))
    p = nemesis.prober
    if p is not None:
        begun = sum(p.begun.values())
        print(f"probes of a paused old leader: {begun} pauses ("
              f"{p.begun['pause-active']} scheduled pause-active of {PROBE_MIN_PAUSE_S:g} s or "
              f"more, {p.begun['pause-probe']} pause-probe)"
              + (": " + ", ".join(f"{k} {v}" for k, v in sorted(p.results.items()))
                 if p.results else "")
              + ("" if p.ready else "; the probe's accounts could not be created"))
    print(report)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 2)[2])
    p.add_argument("--seed", type=int, required=True, help="the schedule's seed (printed)")
    p.add_argument("--minutes", type=float, default=2.0, help="how long faults are injected")
    p.add_argument("--clients", type=int, default=8, help="trading clients (half persistent)")
    p.add_argument("--out", help="where the history and logs go (default .local/chaos/SEED, "
                   "or .local/chaos/SEED-PORTBASE with another --port-base)")
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    p.add_argument("--plan-only", action="store_true", help="print the schedule and exit")
    p.add_argument("--port-base", type=int, default=PORT_BASE,
                   help="the HA cluster's ports start here (default %(default)s); another base "
                        "lets two runs coexist")
    args = p.parse_args()
    if not 1024 <= args.port_base <= 32746:
        p.error("--port-base must be in 1024..32746")
    run = str(args.seed) if args.port_base == PORT_BASE else f"{args.seed}-{args.port_base}"
    args.out = args.out or os.path.join(ROOT, ".local", "chaos", run)
    return args


def main():
    args = parse_args()
    plan = schedule(args.seed, args.minutes * 60)
    if args.plan_only:
        for index, (at, kind, duration) in enumerate(plan):
            member = f"  etcd{etcd_target(args.seed, index)}" if kind == "kill-etcd" else ""
            probed = "  probed" if kind == "pause-active" and duration >= PROBE_MIN_PAUSE_S else ""
            print(f"{at:8.2f} s  {kind:16} {duration:5.2f} s{member}{probed}")
        print(f"{'then':>10}  {'pause-probe':16} until the standby has taken over and "
              f"acknowledged a fill (at most {PROBE_WAIT_S:g} s), probed")
        return 0
    os.makedirs(args.out, exist_ok=True)
    history = History(os.path.join(args.out, "history.jsonl"))
    history.record({"type": "meta", "seed": args.seed, "minutes": args.minutes,
                    "clients": args.clients, "started": time.time(),
                    "plan": [list(p) for p in plan], "probe_min_pause_s": PROBE_MIN_PAUSE_S})
    log(f"seed {args.seed}: {len(plan)} faults over {args.minutes} min (--plan-only lists them)")
    stack = Stack(args, args.out, history)
    stop_clients, stop_faults = threading.Event(), threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    report, clients, nemesis, watcher, replay_failure = None, [], None, None, None
    try:
        try:
            stack.up()
            accounts = create_accounts(stack, history, args.clients)
            prober = Prober(stack, history, stop_faults)
            if not prober.setup(stack.exchanges[0].port):
                log("the probe's accounts could not be created: no pause is probed")
        except (RuntimeError, subprocess.CalledProcessError, OSError) as e:
            log(f"cannot bring the stack up: {e}")
            # ha-cluster.sh's 77: Patroni or etcd cannot be installed here (a skip, not a failure)
            return 77 if getattr(e, "returncode", None) == 77 else 2
        ports = [x.port for x in stack.exchanges]
        clients = [Client(i, accounts[i], SYMBOLS, ports, history, args.seed * 1000 + i,
                          persistent=i % 2 == 1, stop=stop_clients) for i in range(args.clients)]
        watcher = Watcher(stack, history, stop_faults)
        nemesis = Nemesis(stack, plan, args.seed, history, time.monotonic(), stop_faults,
                          prober)
        for t in (*clients, watcher, nemesis):
            t.start()
        # The schedule, its last heals and probes, then the closing probe (bounded: Prober.closing)
        nemesis.join(args.minutes * 60 + 180)
        stop_faults.set()
        nemesis.join()
        log("faults over: healing everything, then letting the clients run 10 s more")
        heal_everything(stack, nemesis)
        time.sleep(10)
        stop_clients.set()
        for c in clients:
            c.join(60)
        watcher.join()
        if not settle(stack):
            log("the stack did not settle within 180 s: the check runs on what is there")
        final = final_state(stack, args.out)
        final_queries(stack, final, args.out)
        replay_failure = replayed(args, stack, final, args.out)
    finally:
        stop_clients.set()
        stop_faults.set()
        for t in (nemesis, watcher):  # before the stack goes: they may restart its processes
            if t is not None and t.is_alive():
                t.join(120)
        stack.down()
        history.close()
    import chaos_check  # noqa: E402
    report = chaos_check.check(args.out)
    summary(args, plan, nemesis, clients, report)
    if replay_failure:
        print(f"ANOMALY replay-failed: {replay_failure}")
    return 1 if report.anomalies or replay_failure else 0


if __name__ == "__main__":
    sys.exit(main())
