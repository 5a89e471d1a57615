#!/usr/bin/env python3
"""Takeover time of a hot standby (exchange-server --standby) beside a plain restart, with a
resting book of --orders orders that never cross.

    scripts/takeover_bench.py [--orders 1000000] [--takeovers 20] [--restarts 5]
                              [--pauses 3] [--lease-ms 5000] [--clients 4] [--load-seconds 2]
                              [--db URL] [--build-dir build]

1. The book: starts exchange-server once on a fresh database (--reset) to create 1,000 accounts
   with ample cash and shares of 10 symbols, stops it, and writes --orders open orders straight
   into the SQL tables (the projection a restart loads): buys at 50-59 and sells at 150-159, so
   none can ever cross, with the cash and shares they reserve taken off the accounts' balances
   and positions (the conservation rules hold).
2. Plain restart: one server; --clients load threads place buy orders at 40 (they rest, never
   cross) one request per connection; every --load-seconds the server is SIGKILLed and started
   again at once on the same port (what an instant supervisor would do), --restarts times.
3. Takeovers: an active server and a standby (--standby), the load going to whichever serves
   (a client whose request is refused, or answered "this is the standby", tries the other; a
   request sent that got no reply is counted as unknown and never retried). Every
   --load-seconds the active one is SIGKILLed; the standby takes over; the killed one is
   started again as the standby and, once it follows the journal, the next round begins.
   --takeovers times.
4. Pauses: the active server is SIGSTOPped; the standby takes over once its lease (--lease-ms)
   has expired (timed by a query sent to the standby every 10 ms until it is answered); the
   paused one, resumed (SIGCONT), must exit 4 (stepped down) and is started again as the
   standby. --pauses times.
For each round it prints the time from the kill to the first request answered by the server
now in charge (the client's view, to within the clients' 5 ms retry pause), and the server's
own log of its takeover; then median and max of both kinds. At the end it checks, in SQL once
the projection has caught up, that every acknowledged order is stored and that cash and
shares are conserved (exit 1 if not).

Without --db a private PostgreSQL is started in .local/takeover-bench-pg (scripts/local-pg.sh).
Every server it starts is stopped at the end, also on Ctrl-C. Ports: free ones, picked at start.
"""
import argparse
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ACCOUNTS = 1000
SYMBOLS = 10


def log(msg):
    print(f"takeover_bench: {msg}", file=sys.stderr, flush=True)


def free_port():
    # Other jobs on a shared machine may hold any fixed port.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def psql(db, query):
    # One -c string is one transaction.
    done = subprocess.run(["psql", db, "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-c", query],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"takeover_bench: psql failed: {done.stderr.strip()}")
    return done.stdout.strip()


def request(port, xml, timeout=10):
    """One request on its own connection. Returns the reply, or raises ConnectionRefusedError
    (nothing was delivered) or another OSError (sent, no reply: the outcome is unknown)."""
    data = xml.encode()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(str(len(data)).encode() + b"\n" + data)
        s.shutdown(socket.SHUT_WR)
        chunks = []
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return b"".join(chunks).decode()
            chunks.append(chunk)


class Server:
    """One exchange-server process on a fixed trading port and admin port."""

    def __init__(self, binary, db, port, admin, log_file):
        self.binary, self.db, self.port, self.admin, self.log_file = binary, db, port, admin, log_file
        self.proc = None

    def start(self, *extra):
        self.proc = subprocess.Popen([self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
                                      "--db", self.db, "--admin-port", str(self.admin), *extra],
                                     stdout=self.log_file, stderr=self.log_file)
        self.launched = time.monotonic()

    def wait_accepting(self, seconds=120):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"takeover_bench: the server on port {self.port} exited; see "
                                 f"{self.log_file.name}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.01)
        raise SystemExit("takeover_bench: the server did not start")

    def healthz(self):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.admin}/healthz", timeout=2) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except OSError:
            return 0, ""

    def wait_following(self, seconds=120):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"takeover_bench: the standby on port {self.port} exited; see "
                                 f"{self.log_file.name}")
            status, body = self.healthz()
            if status == 503 and "standby: following" in body:
                return
            time.sleep(0.02)
        raise SystemExit("takeover_bench: the standby did not start following")

    def kill(self):
        self.proc.kill()
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Load:
    """Clients placing resting buy orders at whichever endpoint serves."""

    def __init__(self, ports, clients):
        self.ports = list(ports)
        self.stopping = False
        self.lock = threading.Lock()
        self.preferred = 0
        self.acked = []      # (order id, account)
        self.answers = []    # (monotonic time sent, time of the reply, port)
        self.unknown = 0     # sent, no reply: never retried
        self.refused = 0     # refused or answered with an error: nothing applied
        self.threads = [threading.Thread(target=self.run, args=(c,), daemon=True)
                        for c in range(clients)]
        for t in self.threads:
            t.start()

    def run(self, client):
        n = 0
        while not self.stopping:
            n += 1
            account = 1 + (client * 7919 + n) % ACCOUNTS
            xml = (f'<transactions id="{account}"><order sym="S{n % SYMBOLS}" amount="1" '
                   f'limit="40"/></transactions>')
            with self.lock:
                first = self.preferred
            served = False
            for i in range(len(self.ports)):
                at = (first + i) % len(self.ports)
                port = self.ports[at]
                sent = time.monotonic()
                try:
                    reply = request(port, xml, timeout=2)
                except ConnectionRefusedError:
                    continue  # nothing delivered: the next endpoint may serve
                except OSError:
                    with self.lock:
                        self.unknown += 1
                        # A silent server (paused): the next request starts with the other.
                        self.preferred = (at + 1) % len(self.ports)
                    served = True  # reported as unknown, not sent again
                    break
                m = re.search(r'<opened [^>]*id="(\d+)"', reply)
                if m:
                    with self.lock:
                        self.acked.append((int(m.group(1)), account))
                        self.answers.append((sent, time.monotonic(), port))
                        self.preferred = at
                    served = True
                    break
                with self.lock:
                    self.refused += 1  # the standby's error, a step-down, unavailable
            if not served:
                time.sleep(0.005)

    def first_answer_after(self, t, port):
        """The first reply from `port` to a request sent after `t` (a reply the killed process
        had already written may still arrive after the kill)."""
        with self.lock:
            times = [a for sent, a, p in self.answers if sent > t and p == port]
        return min(times) if times else None

    def stop(self):
        self.stopping = True
        for t in self.threads:
            t.join()


def probe_serving(port, since, seconds=60):
    """Seconds from `since` until `port` answers a query other than with the standby's error
    (probed every 10 ms: the load's clients may be waiting on a paused server meanwhile)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            # Order 1 is account 2's (build_book).
            reply = request(port, '<transactions id="2"><query id="1"/></transactions>', timeout=1)
            if "<status" in reply:
                return time.monotonic() - since
        except OSError:
            pass
        time.sleep(0.01)
    raise SystemExit(f"takeover_bench: port {port} did not serve within {seconds} s")


def wait_answer(load, t, port, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        first = load.first_answer_after(t, port)
        if first is not None:
            return first - t
        time.sleep(0.005)
    raise SystemExit(f"takeover_bench: no answer from port {port} within {seconds} s of the kill")


def build_book(server, db, n):
    server.start("--reset")
    server.wait_accepting()
    # One request per symbol (each <create> stays within --max-children).
    requests = ["<create>" + "".join(f'<account id="{a}" balance="1000000000"/>'
                                     for a in range(1, ACCOUNTS + 1)) + "</create>"]
    for s in range(SYMBOLS):
        requests.append(f'<create><symbol sym="S{s}">' + "".join(
            f'<account id="{a}">1000000000</account>' for a in range(1, ACCOUNTS + 1)) + "</symbol></create>")
    for xml in requests:
        reply = request(server.port, xml, timeout=60)
        if "<error" in reply:
            raise SystemExit(f"takeover_bench: setting up the accounts failed: {reply[:300]}")
    server.stop()
    t0 = time.monotonic()
    # Order g: account 1 + g % 1000, symbol S(g / 1000 % 10); odd g buys 10 at 50-59, even g
    # sells 10 at 150-159. Reservations come off balances and positions, as the engine would.
    psql(db, f"""
        INSERT INTO orders (id, account_id, symbol, amount, limit_price, open_amount, created_at)
        SELECT g, (1 + g % {ACCOUNTS})::text, 'S' || (g / {ACCOUNTS} % {SYMBOLS}),
               CASE WHEN g % 2 = 1 THEN 10 ELSE -10 END,
               CASE WHEN g % 2 = 1 THEN 50 + g / 2 % 10 ELSE 150 + g / 2 % 10 END,
               10, 1700000000
        FROM generate_series(1, {n}) AS g;
        UPDATE accounts a SET balance = a.balance - r.reserved
        FROM (SELECT account_id, sum(open_amount * limit_price) AS reserved FROM orders
              WHERE amount > 0 GROUP BY account_id) r WHERE r.account_id = a.id;
        UPDATE positions p SET amount = p.amount - r.reserved
        FROM (SELECT account_id, symbol, sum(open_amount) AS reserved FROM orders
              WHERE amount < 0 GROUP BY account_id, symbol) r
        WHERE r.account_id = p.account_id AND r.symbol = p.symbol;""")
    psql(db, "VACUUM ANALYZE orders")
    log(f"wrote {n:,} resting orders into the tables in {time.monotonic() - t0:.1f} s")


def takeover_log_ms(log_name, nth):
    lines = re.findall(r"takeover: serving as the active server .*?\) (\d+) ms after the writer "
                       r"lock came: epoch bump (\d+) ms, journal tail and hand-over (\d+) ms",
                       open(log_name).read())
    return lines[nth] if nth < len(lines) else None


def check(db, acked):
    target = int(psql(db, "SELECT coalesce(max(seq), 0) FROM journal"))
    deadline = time.monotonic() + 120
    while int(psql(db, "SELECT seq FROM projection_position")) < target:
        if time.monotonic() > deadline:
            log("the projection did not catch up within 120 s")
            return False
        time.sleep(0.1)
    with tempfile.NamedTemporaryFile("w", suffix=".csv") as f:
        f.write("".join(f"{i},{a}\n" for i, a in acked))
        f.flush()
        done = subprocess.run(
            ["psql", db, "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-f", "-"],
            input=f"CREATE TEMP TABLE acked (id bigint, account text);\n"
                  f"\\copy acked FROM '{f.name}' WITH (FORMAT csv)\n"
                  f"SELECT count(*) FROM acked k JOIN orders o ON o.id = k.id AND o.account_id = k.account;\n",
            capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"takeover_bench: psql failed: {done.stderr.strip()}")
        stored = done.stdout.strip()
    stored = int(stored.splitlines()[-1])
    cash = psql(db, "SELECT (SELECT sum(deposited) FROM accounts) = (SELECT sum(balance) FROM accounts) "
                    "+ (SELECT coalesce(sum(open_amount * limit_price), 0) FROM orders WHERE amount > 0 "
                    "AND canceled_at IS NULL)")
    shares = psql(db, "SELECT count(*) FROM symbols s "
                      "LEFT JOIN (SELECT symbol, sum(granted) g, sum(amount) h FROM positions GROUP BY symbol) p "
                      "ON p.symbol = s.sym LEFT JOIN (SELECT symbol, sum(open_amount) r FROM orders "
                      "WHERE amount < 0 AND canceled_at IS NULL GROUP BY symbol) o ON o.symbol = s.sym "
                      "WHERE coalesce(p.g, 0) <> coalesce(p.h, 0) + coalesce(o.r, 0)")
    ok = stored == len(acked) and cash == "t" and shares == "0"
    log(f"check: {stored:,} of {len(acked):,} acknowledged orders stored; cash conserved: {cash == 't'}; "
        f"symbols whose shares do not add up: {shares}")
    return ok


def summary(name, values):
    return (f"{name}: median {statistics.median(values) * 1000:.0f} ms, max {max(values) * 1000:.0f} ms, "
            f"min {min(values) * 1000:.0f} ms over {len(values)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--orders", type=int, default=1000000, help="resting orders in the book (never cross)")
    ap.add_argument("--takeovers", type=int, default=20, help="kill -9 of the active server, each taken over")
    ap.add_argument("--restarts", type=int, default=5, help="kill -9 and plain restart, for comparison")
    ap.add_argument("--pauses", type=int, default=3,
                    help="then SIGSTOP of the active server, taken over once its lease expired")
    ap.add_argument("--lease-ms", type=int, default=5000, help="--lease-ms of every server")
    ap.add_argument("--clients", type=int, default=4, help="load threads (one request per connection)")
    ap.add_argument("--load-seconds", type=float, default=2.0, help="load before each kill")
    ap.add_argument("--db", help="database URL (default: private PostgreSQL in .local/takeover-bench-pg)")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    args = ap.parse_args()
    binary = os.path.join(args.build_dir, "bin", "exchange-server")
    db = args.db or subprocess.run(
        [os.path.join(ROOT, "scripts", "local-pg.sh"), "start", os.path.join(ROOT, ".local", "takeover-bench-pg"),
         str(free_port())], check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    logs = [tempfile.NamedTemporaryFile(prefix=f"takeover_bench_{x}_", suffix=".log", delete=False)
            for x in "ab"]
    servers = [Server(binary, db, free_port(), free_port(), logs[i]) for i in range(2)]
    load = None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))
    try:
        log(f"building the book: {args.orders:,} resting orders (logs: {logs[0].name}, {logs[1].name})")
        build_book(servers[0], db, args.orders)
        acked = []

        log(f"plain restart: {args.restarts} kills, each followed at once by a new server")
        restarts = []
        a = servers[0]
        a.start("--lease-ms", str(args.lease_ms))
        a.wait_accepting()
        load = Load([a.port], args.clients)
        for r in range(args.restarts):
            time.sleep(args.load_seconds)
            killed = time.monotonic()
            a.kill()
            a.start("--lease-ms", str(args.lease_ms))
            took = wait_answer(load, killed, a.port)
            restarts.append(took)
            log(f"restart {r + 1}/{args.restarts}: kill to first answered request {took * 1000:.0f} ms")
        load.stop()
        acked += load.acked
        a.stop()

        log(f"takeovers: {args.takeovers} kills of the active server beside a standby")
        takeovers = []
        taken = {s.port: 0 for s in servers}  # takeover lines already in each one's log
        active, standby = servers
        active.start("--lease-ms", str(args.lease_ms))
        active.wait_accepting()
        standby.start("--standby", "--lease-ms", str(args.lease_ms))
        standby.wait_following()
        load = Load([s.port for s in servers], args.clients)
        for k in range(args.takeovers):
            time.sleep(args.load_seconds)
            killed = time.monotonic()
            active.kill()
            took = wait_answer(load, killed, standby.port)
            takeovers.append(took)
            server_side = takeover_log_ms(standby.log_file.name, taken[standby.port])
            taken[standby.port] += 1
            side = (f"; the server: serving {server_side[0]} ms after the lock came (epoch bump "
                    f"{server_side[1]} ms, tail and hand-over {server_side[2]} ms)") if server_side else ""
            log(f"takeover {k + 1}/{args.takeovers}: kill to first answered request {took * 1000:.0f} ms{side}")
            # The killed one comes back as the standby of the new leader.
            active.start("--standby", "--lease-ms", str(args.lease_ms))
            active.wait_following()
            active, standby = standby, active

        if args.pauses:
            log(f"pauses: {args.pauses} SIGSTOPs of the active server (lease {args.lease_ms} ms)")
        pauses = []
        for k in range(args.pauses):
            time.sleep(args.load_seconds)
            paused = time.monotonic()
            active.proc.send_signal(signal.SIGSTOP)
            took = probe_serving(standby.port, paused)
            pauses.append(took)
            active.proc.send_signal(signal.SIGCONT)
            try:
                code = active.proc.wait(30)
            except subprocess.TimeoutExpired:
                raise SystemExit("takeover_bench: the paused server did not step down within 30 s")
            log(f"pause {k + 1}/{args.pauses}: SIGSTOP to the standby serving (a query probed every "
                f"10 ms) {took * 1000:.0f} ms; "
                f"the old server exited {code} after SIGCONT")
            if code != 4:
                raise SystemExit(f"takeover_bench: the paused server exited {code}, not 4")
            taken[standby.port] += 1
            active.start("--standby", "--lease-ms", str(args.lease_ms))
            active.wait_following()
            active, standby = standby, active
        load.stop()
        acked += load.acked
        unknown, refused = load.unknown, load.refused
        for s in servers:
            s.stop()

        print(f"book: {args.orders:,} resting orders; load: {args.clients} clients; "
              f"load average {os.getloadavg()[0]:.1f} at the end")
        print(summary("plain restart (kill -9, new process at once), kill to first answered request",
                      restarts))
        print(summary("takeover by the standby, kill to first answered request", takeovers))
        if pauses:
            print(summary(f"paused active server (lease {args.lease_ms} ms), SIGSTOP to the standby "
                          "serving", pauses))
        print(f"requests: {len(acked):,} acknowledged, {unknown} without a reply (unknown, not retried), "
              f"{refused} refused (standby or unavailable errors: nothing applied)")
        ok = check(db, acked)
        return 0 if ok else 1
    finally:
        if load:
            load.stopping = True
        for s in servers:
            s.stop()


if __name__ == "__main__":
    sys.exit(main())
