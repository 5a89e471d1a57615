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
    through relays of its own (scripts/chaos_proxy.py) that the nemesis can cut or silence;
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

Then everything heals, the stack settles, the final state is read from the tables and queried
through the protocol (every order, by its account), the whole journal is replayed by the
engine's own rules (exchange-replay: its replies and the state it ends in), and
scripts/chaos_check.py checks the history, the reads and the tables against all of it. Output: faults by kind, operations by outcome, takeovers and
promotions with their times, anomalies, the seed. Exit 0 with no anomaly, 1 with some, 2 if the
stack could not be brought up, 77 if Patroni or etcd cannot be installed here.
"""
import argparse
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

import harness
from chaos_clients import Client, History
from chaos_proxy import Relay
from harness import ROOT, Server, free_port, http_get

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

class Exchange:
    """One exchange server with its two relays to the PostgreSQL nodes."""

    def __init__(self, name, binary, out_dir, pg_url_template, pg_ports):
        self.name = name
        self.relays = [Relay(free_port(), pg).start() for pg in pg_ports]
        db = pg_url_template.format(*[r.listen_port for r in self.relays])
        self.server = Server(binary, db, free_port(), free_port(),
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
        self.exchanges = [Exchange(n, binary, self.out_dir, template, pg) for n in ("a", "b")]
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


# ---- the nemesis ------------------------------------------------------------------------------

class Nemesis(threading.Thread):
    """Injects the schedule's faults at their moments and heals each after its duration."""

    def __init__(self, stack, plan, seed, history, started, stop):
        super().__init__(daemon=True, name="nemesis")
        self.stack, self.plan, self.seed, self.history = stack, plan, seed, history
        self.started, self.stop_event = started, stop
        self.heals = []  # (at monotonic, description, function)
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
            self.count(kind, x.name, f"for {duration} s")
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
                self.event("restart", f"exchange {x.name} exited "
                           f"(status {x.server.proc.returncode}); restarted as the standby")
                Nemesis.restart(x)
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
              "created_at, canceled_at, execution_ids FROM orders ORDER BY id",
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
    print(f"faults: {len(plan)} scheduled, {injected} injected of {len(nemesis.injected)} kinds ("
          + ", ".join(f"{k} {v}" for k, v in sorted(nemesis.injected.items())) + ")"
          + ("; skipped (no process in that role then): "
             + ", ".join(f"{k} {v}" for k, v in sorted(nemesis.skipped.items()))
             if nemesis.skipped else "")
          + (f"; kill-etcd on the etcd leader: {nemesis.etcd_leader_kills} of "
             f"{nemesis.injected['kill-etcd']}" if nemesis.injected.get("kill-etcd") else ""))
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
            print(f"{at:8.2f} s  {kind:16} {duration:5.2f} s{member}")
        return 0
    os.makedirs(args.out, exist_ok=True)
    history = History(os.path.join(args.out, "history.jsonl"))
    history.record({"type": "meta", "seed": args.seed, "minutes": args.minutes,
                    "clients": args.clients, "started": time.time(),
                    "plan": [list(p) for p in plan]})
    log(f"seed {args.seed}: {len(plan)} faults over {args.minutes} min (--plan-only lists them)")
    stack = Stack(args, args.out, history)
    stop_clients, stop_faults = threading.Event(), threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    report, clients, nemesis, watcher, replay_failure = None, [], None, None, None
    try:
        try:
            stack.up()
            accounts = create_accounts(stack, history, args.clients)
        except (RuntimeError, subprocess.CalledProcessError, OSError) as e:
            log(f"cannot bring the stack up: {e}")
            # ha-cluster.sh's 77: Patroni or etcd cannot be installed here (a skip, not a failure)
            return 77 if getattr(e, "returncode", None) == 77 else 2
        ports = [x.port for x in stack.exchanges]
        clients = [Client(i, accounts[i], SYMBOLS, ports, history, args.seed * 1000 + i,
                          persistent=i % 2 == 1, stop=stop_clients) for i in range(args.clients)]
        watcher = Watcher(stack, history, stop_faults)
        nemesis = Nemesis(stack, plan, args.seed, history, time.monotonic(), stop_faults)
        for t in (*clients, watcher, nemesis):
            t.start()
        nemesis.join(args.minutes * 60 + 5)
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
