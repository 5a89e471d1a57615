#!/usr/bin/env python3
"""Abuse benchmark: issue 20's findings replayed against the real server, one at a time.

    scripts/abuse.py [--quick] [--only 1,5,11] [--models pool[,reactor,...]] [--db URL]
                     [--rss-budget-mb 1536] [--json FILE] [--keep-logs DIR]

Every attack is made of well-formed protocol requests (or, for 11, requests that never end).
For each one the script starts build/bin/exchange-server on a fresh database (--reset, and
without --db a database created for it), with the admin port on; creates a probe account with
one resting order; starts a probe client in a process of its own (a persistent session that
queries that order every 10 ms: its latency is counted from the moment each query was due, so
a stalled server shows in the percentiles rather than hiding behind fewer samples); runs the
attack for a bounded time while it samples the server's resident memory (/proc/PID/status,
VmRSS every 50 ms and VmHWM at the end) and scrapes /metrics every 250 ms
(exchange_projection_lag_rows, _entries, _seconds); then stops the attack and the probe and
waits up to 30 s for the projection lag to reach zero. It records every byte the attacker sent
and received, so the largest reply/request ratio is known, and every <error> the attacker got,
summarized by reason (the flag it names, or its text).

The attacks (the findings of issue 20; --only takes their numbers):
   1  a create / transactions with a 10,000-character account id or symbol
   2  one order sweeping a huge resting book (200,000 sells from 20 accounts at the
      per-account cap; 30,000 with --quick): the whole sweep, then the largest allowed ones
   3  sustained requests of 10,000 orders each (5,000 crossing pairs) from 3 sessions
   4  an element with 150,000 attributes (server started with --max-request-bytes 4 MiB so
      that the request is read at all)
   5  reply amplification: 10,000 <query> of an order with 2,000 fills, single queries of it
      and of one with 400, 10,000 empty <order/>; 400 sessions that send and never read
   6  copy amplification: a 540 KB request whose 160,000-digit account id would be copied into
      each of its 10,000 children; and the largest allowed copy (32 digits, 10,000 orders)
   7  accounts, symbols and resting orders up to the caps (--quick: the server is started
      with caps of 50,000 accounts, 1,000 symbols and 100,000 resting orders)
   8  256 persistent sessions sending ~1 MiB requests (10,000 queries, padded) in a loop
   9  10,000 archived orders (closed, projected and dropped from memory with
      --closed-orders-cached 0; --journal-keep 1000) queried in one request, 8 sessions
  10  maximum-size legitimate requests: 4 sessions, 10,000 orders in ~1 MiB each
      (32-digit account, 32-character symbol, prices padded with trailing zeros)
  11  1,500 connections that each announce 1 MiB and send all but 100 bytes of it, then wait
  12  100 idle (and 10 trickling) connections on the admin port while /healthz is probed
  13  projection stall: a psql session holds LOCK TABLE accounts IN ACCESS EXCLUSIVE MODE for
      20 s while a client creates an account every 100 ms; seconds until /healthz is non-200,
      and until it is 200 again after the release
  14  commit stall: the same with LOCK TABLE journal (the group commit itself waits)

Goals (issue 20), marked per row: peak RSS <= --rss-budget-mb (default 1536 MiB, the issue's
1.5 GB; the server's own --max-memory-bytes defaults to the same); probe p99 <= 250 ms and no probe errors
(not judged in 14, where the database stalls the commits the probe's queries wait for); every
reply <= 64 x its request or <= 64 KiB (the server's --max-reply-ratio allows 64 KiB to any
request, PROTOCOL.md section 7), else refused; projection lag back to zero within 30 s of the
attack's end; in 13 and 14 /healthz non-200 within 15 s of the stall; in 12 every /healthz
answered 200 within 250 ms (p99). A benchmark, not a test: nothing is asserted, the exit
status is 0 whatever the verdicts, and the figures depend on the machine.

Without --db it starts a private PostgreSQL (scripts/local-pg.sh) in .local/abuse-pg on port
25442, makes a fresh database `abuse` on it for every attack, and stops the cluster at the end
(also after Ctrl-C). With --db it uses that database, reset by the server for every attack,
and never stops it. --quick: every attack shorter and smaller (about 2 minutes in all); the
full run takes about 6 minutes.
"""
import argparse
import html
import json
import math
import multiprocessing
import os
import re
import resource
import selectors
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from urllib.parse import urlsplit, urlunsplit

from harness import ROOT, Server, free_port, http_get, local_pg, metrics

BIN = os.path.join(ROOT, "build", "bin")
SERVER = os.path.join(BIN, "exchange-server")
PG_BIN = "/usr/lib/postgresql/15/bin"
PSQL = os.path.join(PG_BIN, "psql")
PG_DIR = os.path.join(ROOT, ".local", "abuse-pg")
PG_PORT = 25442
FRESH_DB = "abuse"

RSS_BUDGET_MIB = 1536   # the issue's 1.5 GB
P99_GOAL_MS = 250.0
RATIO_GOAL = 64.0
RATIO_FLOOR_BYTES = 64 * 1024   # --max-reply-ratio always allows this much
LAG_GOAL_S = 30.0
READY_GOAL_S = 15.0
PROBE_EVERY_S = 0.010
LAG_BOUND_ROWS = 1000000   # the server's --max-projection-rows default

DECL = '<?xml version="1.0" encoding="UTF-8"?>\n'
PROBE_ACCOUNT = "900000001"
ERROR_RE = re.compile(rb"<error[^>]*>([^<]*)</error>")


def log(msg):
    print(f"abuse: {msg}", flush=True)


# ---- requests ---------------------------------------------------------------------------------

def create(body):
    return (DECL + "<create>" + body + "</create>").encode()


def tx(account, body):
    return (DECL + f'<transactions id="{account}">' + body + "</transactions>").encode()


def order(sym, amount, limit):
    return f'<order sym="{sym}" amount="{amount}" limit="{limit}"/>'


def account_xml(account, balance):
    return f'<account id="{account}" balance="{balance}"/>'


def shares_xml(sym, holdings):
    """<symbol> giving each (account, amount) of `holdings` shares of `sym`."""
    return f'<symbol sym="{sym}">' + "".join(f'<account id="{a}">{n}</account>' for a, n in holdings) + "</symbol>"


def frame(xml):
    return b"%d\n" % len(xml) + xml


def reason(text):
    """What an <error>'s text is about, short: the limit flags it names, or its words."""
    t = html.unescape(text.decode("utf-8", "replace"))
    flags = sorted(set(re.findall(r"--(?:max|read)-[a-z-]+", t)))
    if flags:
        head = t.split(":")[0] if t.startswith(("Server busy", "Request refused")) else ""
        return ", ".join(flags) + (f" ({head})" if head and len(head) < 20 else "")
    t = re.sub(r"\d+", "N", t)
    return t if len(t) <= 64 else t[:61] + "..."


def opened_ids(reply):
    return [int(m) for m in re.findall(rb'<opened [^>]*\bid="(\d+)"', reply)]


# ---- the wire -----------------------------------------------------------------------------------

class WireError(Exception):
    pass


class Session:
    """A persistent session (PROTOCOL.md section 8): framed requests, framed replies."""

    def __init__(self, port, timeout=60.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""
        self.sock.sendall(b"EXCHANGE-SESSION 1\n")
        line = self._line()
        if line != b"EXCHANGE-SESSION 1 OK":
            raise WireError(f"no session: {line[:80]!r}")

    def _recv(self, n=1 << 20):
        data = self.sock.recv(n)
        if not data:
            raise WireError("the server closed the session")
        return data

    def _line(self):
        while b"\n" not in self.buf:
            if len(self.buf) > 64:
                raise WireError(f"bad reply framing: {self.buf[:64]!r}")
            self.buf += self._recv()
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def request(self, framed):
        """Sends one framed request; its reply's XML. A framing error (the server's unframed
        error document, then a close) comes back as that document."""
        self.sock.sendall(framed)
        line = self._line()
        if not line.isdigit():
            rest = [line, b"\n", self.buf]
            self.buf = b""
            try:
                while True:
                    rest.append(self._recv())
            except (WireError, OSError):
                pass
            self.close()
            return b"".join(rest)
        n = int(line)
        body = bytearray(self.buf[:n])
        self.buf = self.buf[n:]
        while len(body) < n:
            body += self._recv(min(n - len(body), 1 << 22))
        return bytes(body)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def one_shot(port, framed, timeout=60.0):
    """One request on its own connection, the way every old client talks; the reply's bytes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        try:
            s.sendall(framed)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # refused before it was read (too long): the reply may still be there
        chunks = []
        while True:
            try:
                data = s.recv(1 << 20)
            except ConnectionResetError:
                break
            if not data:
                break
            chunks.append(data)
    return b"".join(chunks)


def scrape(port):
    """The exposition's samples without labels, {name: value}."""
    return {name: value for name, value in metrics(port, timeout=3.0).items() if "{" not in name}


# ---- what the attacker saw ------------------------------------------------------------------

class Tally:
    """Bytes, replies and errors of one attack's requests (thread-safe)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.requests = self.sent = self.received = 0
        self.max_ratio, self.max_ratio_of = 0.0, (0, 0)
        self.over_budget = 0          # replies > 64 x their request and > 64 KiB
        self.worst_over = (0, 0)
        self.errors = Counter()       # reason -> <error> elements received
        self.failures = Counter()     # connection-level trouble, by kind

    def reply(self, request_bytes, reply):
        """Counts one request of `request_bytes` bytes of XML and its reply's XML."""
        n = len(reply)
        ratio = n / max(request_bytes, 1)
        texts = Counter(ERROR_RE.findall(reply)) if b"<error" in reply else None
        with self.lock:
            self.requests += 1
            self.sent += request_bytes
            self.received += n
            if ratio > self.max_ratio:
                self.max_ratio, self.max_ratio_of = ratio, (request_bytes, n)
            if ratio > RATIO_GOAL and n > RATIO_FLOOR_BYTES:
                self.over_budget += 1
                self.worst_over = max(self.worst_over, (n, request_bytes))
            if texts:
                for text, count in texts.items():
                    self.errors[reason(text)] += count

    def errors_in(self, reply):
        """Counts the <error>s of a reply without counting a request (attack 11)."""
        texts = Counter(ERROR_RE.findall(reply))
        with self.lock:
            for text, count in texts.items():
                self.errors[reason(text)] += count

    def sent_only(self, request_bytes, what=None):
        with self.lock:
            self.requests += 1
            self.sent += request_bytes
            if what:
                self.failures[what] += 1

    def failure(self, what):
        with self.lock:
            self.failures[what] += 1


# ---- the probe (a process of its own, so the attacker's threads cannot delay it) -------------

def _probe_main(port, order_id, stop, results):
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops it
    request = frame(tx(PROBE_ACCOUNT, f'<query id="{order_id}"/>'))
    latencies, errors = [], Counter()
    session = None
    due = time.monotonic()
    while not stop.is_set():
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)
        start = time.monotonic()
        try:
            if session is None:
                session = Session(port, timeout=10.0)
            reply = session.request(request)
            latencies.append(time.monotonic() - start)
            if b"<status" not in reply:
                m = ERROR_RE.search(reply)
                errors[reason(m.group(1)) if m else f"unexpected reply {reply[:40]!r}"] += 1
        except (OSError, WireError) as e:
            latencies.append(time.monotonic() - start)
            errors[f"connection: {type(e).__name__}: {str(e)[:60]}"] += 1
            if session:
                session.close()
            session = None
            stop.wait(0.05)
        # The next one is due 10 ms after this one was, or at once if that has passed: one
        # query outstanding, no burst to catch up.
        due = max(due + PROBE_EVERY_S, time.monotonic())
    if session:
        session.close()
    results.put({"latencies": latencies, "errors": dict(errors)})


def corrected(latencies_ms, every_ms):
    """The latencies plus, for each one longer than the probe's period, the queries a client
    sending every `every_ms` would have had waiting meanwhile (L - period, L - 2 periods, ...):
    HdrHistogram's correction for coordinated omission, so that one long stall weighs as much
    as the queries it held up."""
    out = list(latencies_ms)
    for lat in latencies_ms:
        k = lat - every_ms
        while k > 0:
            out.append(k)
            k -= every_ms
    return sorted(out)


class Probe:
    def __init__(self, port, order_id):
        ctx = multiprocessing.get_context("fork")
        self.stop_event, self.results = ctx.Event(), ctx.Queue()
        self.proc = ctx.Process(target=_probe_main, args=(port, order_id, self.stop_event, self.results),
                                daemon=True)
        self.proc.start()
        self.summary = None

    def stop(self):
        if self.summary is not None:
            return self.summary
        self.stop_event.set()
        try:
            r = self.results.get(timeout=30)
        except Exception:  # noqa: BLE001  (queue.Empty, or the process died)
            r = {"latencies": [], "errors": {"the probe process did not report": 1}}
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        raw = sorted(x * 1000 for x in r["latencies"])
        lat = corrected(raw, PROBE_EVERY_S * 1000)
        self.summary = {"n": len(raw), "p50": pct(lat, 50), "p99": pct(lat, 99), "raw_p99": pct(raw, 99),
                        "max": raw[-1] if raw else float("nan"), "errors": r["errors"]}
        return self.summary


def pct(sorted_values, p):
    """Nearest-rank percentile."""
    if not sorted_values:
        return float("nan")
    return sorted_values[max(0, math.ceil(p / 100 * len(sorted_values)) - 1)]


# ---- the server and what it costs -----------------------------------------------------------

def rss_kib(pid, field="VmRSS:"):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def start_server(db, model, flags, logpath):
    """exchange-server for one attack on free ports (trading and admin), listening and its
    /healthz answering; raises RuntimeError if it does not start."""
    port, admin = free_port(), free_port()
    while admin == port:
        admin = free_port()
    server = Server(SERVER, db, port, admin, logpath)
    # Its own session: a Ctrl-C reaches only this script, which then stops the server itself.
    server.start("--concurrency", model, "--reset", "--log-level", "warn", *flags, new_session=True)
    try:
        if not server.wait_listening(120, pause=0.1, ready=lambda: http_get(admin, "/healthz", timeout=2)):
            if not server.alive():
                raise RuntimeError(f"exchange-server exited with status {server.proc.returncode} at start-up "
                                   f"(log {logpath}): {server.log_tail()}")
            raise RuntimeError("exchange-server did not start listening within 120 s")
    except BaseException:
        server.close()
        raise
    return server


class Monitor:
    """Samples the server's RSS every 50 ms and its /metrics every 250 ms, on two threads."""

    def __init__(self, server):
        self.server = server
        self.rss_peak_kib = 0
        self.lag_rows_peak = self.lag_entries_peak = 0.0
        self.lag_s_peak = 0.0
        self.last = {}
        self.scrape_failures = 0
        self.samples = self.at_bound = 0
        self.queue_peak = self.commit_stalled_peak = 0.0
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._rss, daemon=True),
                        threading.Thread(target=self._metrics, daemon=True)]
        for t in self.threads:
            t.start()

    def _rss(self):
        while not self.stopping.wait(0.05):
            self.rss_peak_kib = max(self.rss_peak_kib, rss_kib(self.server.pid))

    def _metrics(self):
        while not self.stopping.wait(0.25):
            self.sample()

    def sample(self):
        try:
            m = scrape(self.server.admin)
        except OSError:
            self.scrape_failures += 1
            return None
        self.last = m
        self.lag_rows_peak = max(self.lag_rows_peak, m.get("exchange_projection_lag_rows", 0))
        self.lag_entries_peak = max(self.lag_entries_peak, m.get("exchange_projection_lag_entries", 0))
        self.lag_s_peak = max(self.lag_s_peak, m.get("exchange_projection_lag_seconds", 0))
        self.samples += 1
        self.queue_peak = max(self.queue_peak, m.get("exchange_queue_length", 0))
        self.commit_stalled_peak = max(self.commit_stalled_peak, m.get("exchange_commit_stalled_seconds", 0))
        # Commits wait while this many rows are unprojected (--max-projection-rows);
        # within one write (100,000 rows) of it counts as at the bound.
        self.at_bound += m.get("exchange_projection_lag_rows", 0) >= LAG_BOUND_ROWS - 100000
        return m

    def stop(self):
        # VmHWM is the kernel's own peak of the resident set: nothing between samples escapes it.
        self.rss_peak_kib = max(self.rss_peak_kib, rss_kib(self.server.pid), rss_kib(self.server.pid, "VmHWM:"))
        self.stopping.set()
        for t in self.threads:
            t.join()


# ---- one attack's context ---------------------------------------------------------------------

class Ctx:
    def __init__(self, server, monitor, args, db):
        self.server, self.monitor, self.args, self.db = server, monitor, args, db
        self.port, self.admin = server.port, server.admin
        self.tally = Tally()
        self.notes = []
        self.abort = threading.Event()   # set on Ctrl-C: every loop ends
        self.deadline = None
        self.ended_at = None             # when the attack ended (lag is timed from here)
        self.ready = None                # for the stalls: seconds to non-200, back to 200
        self.health = None               # attack 12: the /healthz probes
        self.probe = None
        self.judge_probe = True

    # Time ------------------------------------------------------------------------------------
    def start_clock(self, seconds):
        self.deadline = time.monotonic() + seconds

    def over(self):
        return self.abort.is_set() or (self.deadline is not None and time.monotonic() >= self.deadline)

    def left(self):
        return max(0.0, self.deadline - time.monotonic())

    # Requests --------------------------------------------------------------------------------
    def send(self, xml, session=None):
        """Sends one request (on `session`, else one-shot) and counts it; its reply or None."""
        framed = frame(xml)
        try:
            reply = session.request(framed) if session else one_shot(self.port, framed)
        except (OSError, WireError) as e:
            self.tally.sent_only(len(xml), f"{type(e).__name__}: {str(e)[:50]}")
            return None
        if not reply:
            self.tally.sent_only(len(xml), "closed without a reply")
            return None
        self.tally.reply(len(xml), reply)
        return reply

    def setup(self, xml, expect=b"<created"):
        """A set-up request, not counted; its reply must hold `expect` and no error."""
        reply = one_shot(self.port, frame(xml), timeout=300)
        if expect not in reply or b"<error" in reply:
            m = ERROR_RE.search(reply)
            raise RuntimeError(f"set-up request failed: {(m.group(1) if m else reply[:200])!r}")
        return reply

    def workers(self, n, fn):
        """Runs fn(i) on n threads and waits for them all."""
        errors = []

        def run(i):
            try:
                fn(i)
            except Exception as e:  # noqa: BLE001  (reported, never silent)
                errors.append(f"worker {i}: {type(e).__name__}: {e}")
                self.tally.failure(f"attacker thread died: {type(e).__name__}")

        threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(0.5)
        for e in errors[:3]:
            self.notes.append(e)

    def loop_sessions(self, n, request_for):
        """n sessions, each sending request_for(i) over and over until the deadline."""
        def worker(i):
            xml = request_for(i)
            session = None
            while not self.over():
                if session is None:
                    try:
                        session = Session(self.port)
                    except (OSError, WireError) as e:
                        self.tally.failure(f"session: {type(e).__name__}")
                        time.sleep(0.1)
                        continue
                reply = self.send(xml, session)
                if reply is None or b"Bad framing" in reply:
                    session.close()
                    session = None
            if session:
                session.close()
        self.workers(n, worker)

    def loop_one_shot(self, n, request_for):
        def worker(i):
            k = 0
            while not self.over():
                self.send(request_for(i, k))
                k += 1
        self.workers(n, worker)

    def wait_projection(self, timeout=120):
        """Until /metrics shows no lag (set-up steps that need the tables)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                m = scrape(self.admin)
                if m.get("exchange_projection_lag_rows", 1) == 0 and m.get("exchange_projection_lag_entries", 1) == 0:
                    return True
            except OSError:
                pass
            time.sleep(0.1)
        return False


def sizes(quick):
    """Attack lengths (s) and sizes, full and --quick."""
    return {
        "seconds": 4 if quick else 15,        # most attacks
        "sustained": 6 if quick else 20,      # attack 3
        "sellers": 3 if quick else 20,        # attack 2: 10,000 resting sells each
        "caps_seconds": 40 if quick else 170,  # attack 7 at most
        "partial_hold": 8 if quick else 20,   # attack 11
        "stall_hold": 14 if quick else 20,    # attacks 13, 14
    }


# ---- the attacks --------------------------------------------------------------------------------

def a1_long_names(ctx):
    long_id, long_sym = "7" * 10000, "S" * 10000
    attacks = [create(account_xml(long_id, "10")),
               create(shares_xml(long_sym, [(PROBE_ACCOUNT, 5)])),
               tx(long_id, order("PROBE", 1, "1"))]
    fresh = iter(range(10 ** 9))
    lock = threading.Lock()

    def request(i, k):
        if k % 4 == 3:  # the largest allowed: a new 32-digit account
            with lock:
                n = next(fresh)
            return create(account_xml(f"1{n:031d}", "10"))
        return attacks[k % 4]

    ctx.start_clock(S["seconds"])
    ctx.loop_one_shot(4, request)
    ctx.notes.append("one-shot clients: 10,000-character id in <create>, 10,000-character symbol, "
                     "10,000-digit <transactions id>; every 4th request a new 32-digit account (allowed)")


def a2_sweep(ctx):
    """Rounds until the time bound: build the book, try the whole sweep, sweep it in the largest
    allowed pieces."""
    n = S["sellers"]
    sellers = [str(2001 + i) for i in range(n)]
    buyer = "2000"
    ctx.setup(create(account_xml(buyer, "100000000000") + "".join(account_xml(s, "0") for s in sellers)
                     + shares_xml("SWP", [(s, 1000000000) for s in sellers])))
    sells = "".join(order("SWP", -1, "1") for _ in range(10000))
    total = n * 10000
    builds, wholes, sweeps, refused = [], [], [], 0
    ctx.start_clock(S["seconds"] * 2)
    while not ctx.over():
        t0 = time.monotonic()
        for s in sellers:
            ctx.send(tx(s, sells))
        builds.append(time.monotonic() - t0)
        # From one account: its cap.
        ctx.send(tx(sellers[0], order("SWP", -1, "1")))
        # The finding: one buy crossing the whole book.
        t0 = time.monotonic()
        whole = ctx.send(tx(buyer, order("SWP", total, "1")))
        wholes.append((time.monotonic() - t0) * 1000)
        refused += whole is not None and b"--max-executions-per-request" in whole
        # The largest allowed sweeps, until the book is empty.
        for _ in range(n):
            t0 = time.monotonic()
            reply = ctx.send(tx(buyer, order("SWP", 10000, "1")))
            if reply is None or b"<opened" not in reply:
                break
            sweeps.append((time.monotonic() - t0) * 1000)
    ctx.notes.append(f"{len(builds)} rounds: a book of {total:,} resting sells from {n} accounts (10,000 each, the "
                     f"per-account cap; built in {statistics.median(builds):.1f} s), one buy of {total:,} "
                     f"(refused by --max-executions-per-request {refused} of {len(wholes)} times, "
                     f"{max(wholes):.0f} ms at most), then sweeps of 10,000")
    if sweeps:
        ctx.notes.append(f"largest allowed sweep, 10,000 executions by one order: {len(sweeps)} of them, "
                         f"median {statistics.median(sweeps):.0f} ms, max {max(sweeps):.0f} ms per request")


def a3_sustained(ctx):
    clients = 3
    accounts = [str(3001 + i) for i in range(clients)]
    ctx.setup(create("".join(account_xml(a, "100000000000") for a in accounts)
                     + shares_xml("SUS", [(a, 1000000000) for a in accounts])))
    body = (order("SUS", -1, "1") + order("SUS", 1, "1")) * 5000
    ctx.start_clock(S["sustained"])
    ctx.loop_sessions(clients, lambda i: tx(accounts[i], body))
    ctx.notes.append(f"{clients} sessions, each request 10,000 orders (5,000 crossing pairs: "
                     f"5,000 executions), {ctx.tally.requests} requests in {S['sustained']} s")


def a4_attributes(ctx):
    xml = create('<account id="1" balance="1"' + "".join(f' a{i}=""' for i in range(150000)) + "/>")
    ctx.start_clock(S["seconds"])
    ctx.loop_one_shot(2, lambda i, k: xml)
    ctx.notes.append(f"one-shot clients, each request one element with 150,000 attributes "
                     f"({len(xml):,} bytes; server with --max-request-bytes 4194304)")


class NonReaders:
    """`n` sessions that send `xml` over and over and never read a byte, on one thread."""

    def __init__(self, port, n, xml):
        self.port, self.n = port, n
        self.data = memoryview(frame(xml))
        self.sent = self.closed = self.opened = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        sel = selectors.DefaultSelector()
        for _ in range(self.n):
            try:
                s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
                s.sendall(b"EXCHANGE-SESSION 1\n")
                s.setblocking(False)
            except OSError:
                continue
            self.opened += 1
            sel.register(s, selectors.EVENT_WRITE, [0])
        while not self.stopping.is_set():
            events = sel.select(0.1)
            if not events:
                continue
            for key, _ in events:
                s, state = key.fileobj, key.data
                try:
                    n = s.send(self.data[state[0]:])
                except BlockingIOError:
                    continue
                except OSError:
                    sel.unregister(s)
                    s.close()
                    self.closed += 1
                    continue
                self.sent += n
                state[0] = (state[0] + n) % len(self.data)
            time.sleep(0.01)  # no busy loop: sockets the server stopped reading stay unwritable
        for key in list(sel.get_map().values()):
            key.fileobj.close()
        sel.close()

    def stop(self):
        self.stopping.set()
        self.thread.join()


def a5_reply_amplification(ctx):
    buyer, seller = "5001", "5002"
    ctx.setup(create(account_xml(buyer, "1000000000") + account_xml(seller, "0")
                     + shares_xml("AMP", [(seller, 3000)])))
    ctx.setup(tx(seller, order("AMP", -1, "1") * 2000), b"<opened")
    big = opened_ids(ctx.setup(tx(buyer, order("AMP", 2000, "1")), b"<opened"))[0]
    ctx.setup(tx(seller, order("AMP", -1, "1") * 400), b"<opened")
    mid = opened_ids(ctx.setup(tx(buyer, order("AMP", 400, "1")), b"<opened"))[0]
    many_queries = tx(buyer, f'<query id="{big}"/>' * 10000)
    one_big = tx(buyer, f'<query id="{big}"/>')
    one_mid = tx(buyer, f'<query id="{mid}"/>')
    empties = tx(buyer, "<order/>" * 10000)
    ctx.start_clock(S["seconds"])
    readers = NonReaders(ctx.port, 400, many_queries)
    try:
        def worker(i):
            if i == 0:
                ctx.loop_sessions(1, lambda _: many_queries)
            elif i == 1:
                ctx.loop_sessions(1, lambda _: empties)
            else:
                while not ctx.over():
                    ctx.send(one_big if i == 2 else one_mid)
        ctx.workers(4, worker)
    finally:
        readers.stop()
    ctx.notes.append(f"order {big} has 2,000 executions, order {mid} 400; requests: 10,000 queries of "
                     f"{big} ({len(many_queries):,} bytes), one query of each, 10,000 <order/>")
    ctx.notes.append(f"400 sessions sending the 10,000-query request and never reading: {readers.opened} opened, "
                     f"{readers.sent / 1048576:.0f} MiB sent, {readers.closed} closed by the server")


def a6_copy_amplification(ctx):
    acct = "6" * 32
    ctx.setup(create(account_xml(acct, "100000000000") + shares_xml("CPY", [(acct, 1000000000)])))
    children = order("CPY", -1, "1") * 10000
    long_id = "6" * (540000 - len(children) - 120)
    long_req = tx(long_id, children)
    allowed = tx(acct, (order("CPY", -1, "1") + order("CPY", 1, "1")) * 5000)
    ctx.start_clock(S["seconds"])

    def worker(i):
        if i < 2:
            while not ctx.over():
                ctx.send(long_req)
        else:
            ctx.loop_sessions(1, lambda _: allowed)
    ctx.workers(3, worker)
    ctx.notes.append(f"{len(long_req):,}-byte request: a {len(long_id):,}-digit account id and 10,000 orders "
                     f"(2 one-shot clients); allowed: 32-digit id, 10,000 crossing orders (1 session)")


def a7_caps(ctx):
    caps = ctx.caps
    n_acc, n_sym, n_open = caps["accounts"], caps["symbols"], caps["open"]
    ctx.start_clock(S["caps_seconds"])
    t0 = time.monotonic()
    # Accounts up to the cap (the probe's is one), 10,000 per request, on two sessions.
    ids = [str(i) for i in range(1, n_acc)]
    chunks = [ids[k:k + 10000] for k in range(0, len(ids), 10000)]
    lock = threading.Lock()

    def next_chunk():
        with lock:
            return chunks.pop() if chunks else None

    def accounts_worker(i):
        s = Session(ctx.port)
        while not ctx.over():
            chunk = next_chunk()
            if chunk is None:
                break
            ctx.send(create("".join(account_xml(a, "1000000") for a in chunk)), s)
        s.close()
    ctx.workers(2, accounts_worker)
    ctx.send(create(account_xml(str(n_acc + 5), "1")))   # one too many
    t_acc = time.monotonic() - t0
    # Symbols up to the cap (PROBE is one), 4,000 per request, each with a position of account 1.
    syms = [f"Y{k}" for k in range(n_sym - 1)]
    for k in range(0, len(syms), 4000):
        if ctx.over():
            break
        ctx.send(create("".join(shares_xml(s, [("1", 1)]) for s in syms[k:k + 4000])))
    ctx.send(create(shares_xml("YMORE", [("1", 1)])))   # one too many
    t_sym = time.monotonic() - t0 - t_acc
    # Resting orders up to the cap (the probe's is one): buys of 1 share at 1-99 on every symbol,
    # 10,000 per account (its cap), one request each, on two sessions.
    want = n_open - 1
    plan = []
    for a in range(1, n_acc):
        if want <= 0:
            break
        k = min(10000, want)
        plan.append((str(a), k))
        want -= k
    plan.reverse()
    counter = iter(range(10 ** 12))

    def orders_worker(i):
        s = Session(ctx.port)
        while not ctx.over():
            with lock:
                if not plan:
                    break
                account, k = plan.pop()
                base = next(counter) * 10000
            body = "".join(order(syms[(base + j) % len(syms)], 1, str(1 + (base + j) % 99)) for j in range(k))
            ctx.send(tx(account, body), s)
        s.close()
    ctx.workers(2, orders_worker)
    ctx.send(tx("1", order("Y0", 1, "1")))   # one too many on the exchange (and for account 1)
    t_ord = time.monotonic() - t0 - t_acc - t_sym
    m = ctx.monitor.sample() or ctx.monitor.last
    ctx.notes.append(f"caps {n_acc:,} accounts, {n_sym:,} symbols, {n_open:,} resting orders: "
                     f"accounts in {t_acc:.0f} s, symbols in {t_sym:.0f} s, orders in {t_ord:.0f} s; "
                     f"resting at the end {int(m.get('exchange_orders_resting', -1)):,}"
                     + ("; STOPPED at the time bound before reaching the caps" if ctx.over() else ""))


def padded_queries(account, size):
    """A request of 10,000 queries of orders that were never assigned, padded to `size` bytes."""
    child = '<query id="1000000000001"/>'
    base = len(tx(account, ""))
    per = (size - base) // 10000
    xml = tx(account, (child + " " * (per - len(child))) * 10000)
    return xml[:-len(b"</transactions>")] + b" " * (size - len(xml)) + b"</transactions>"


def a8_big_sessions(ctx):
    ctx.setup(create(account_xml("8001", "1")))
    xml = padded_queries("8001", (1 << 20) - 64)
    ctx.start_clock(S["seconds"])
    ctx.loop_sessions(256, lambda i: xml)
    ctx.notes.append(f"256 sessions, each request {len(xml):,} bytes (10,000 queries, padded), "
                     f"{ctx.tally.requests} requests")


def a9_archived(ctx):
    buyer = "9001"
    ctx.setup(create(account_xml(buyer, "1000000")))
    ids = opened_ids(ctx.setup(tx(buyer, order("PROBE", 1, "1") * 10000), b"<opened"))
    ctx.setup(tx(buyer, "".join(f'<cancel id="{i}"/>' for i in ids)), b"<canceled")
    if not ctx.wait_projection():
        ctx.notes.append("set-up: the projection did not catch up within 120 s")
    time.sleep(0.3)
    ctx.setup(create(account_xml("9002", "1")))   # the first write after it drops them from memory
    before = ctx.monitor.sample() or {}
    xml = tx(buyer, "".join(f'<query id="{i}"/>' for i in ids))
    ctx.start_clock(S["seconds"])
    ctx.loop_sessions(8, lambda i: xml)
    after = ctx.monitor.sample() or {}

    def delta(name):
        return int(after.get(name, 0) - before.get(name, 0))
    ctx.notes.append(f"8 sessions, each request 10,000 queries of canceled orders no longer in memory: "
                     f"{ctx.tally.requests} requests, {delta('exchange_archive_queries_total')} archive statements "
                     f"for {delta('exchange_archive_orders_total'):,} orders, "
                     f"{delta('exchange_archive_refused_total')} refused")


def a10_max_legit(ctx):
    clients = 4
    sym = "M" * 32
    accounts = [f"{i + 1:032d}" for i in range(clients)]
    ctx.setup(create("".join(account_xml(a, "100000000000") for a in accounts)
                     + shares_xml(sym, [(a, 1000000000) for a in accounts])))
    limit_bytes = (1 << 20) - 256
    base = len(tx(accounts[0], ""))
    unpadded = len(order(sym, "-1.0", "1.0"))
    zeros = ((limit_bytes - base) // 10000 - unpadded) // 2
    pad = "0" * zeros

    def request(i):
        pair = order(sym, "-1.0" + pad, "1.0" + pad) + order(sym, "1.0" + pad, "1.0" + pad)
        return tx(accounts[i], pair * 5000)
    size = len(request(0))
    ctx.start_clock(S["seconds"])
    ctx.loop_sessions(clients, request)
    ctx.notes.append(f"{clients} sessions, each request {size:,} bytes: 10,000 orders (5,000 crossing pairs) "
                     f"with a 32-digit account, a 32-character symbol and {zeros + 1} fractional digits; "
                     f"{ctx.tally.requests} requests")


def a11_partial(ctx):
    n, size = 1500, 1 << 20
    data = memoryview(b"%d\n" % size + b"<transactions id=\"1\">" + b" " * (size - 100 - 21))
    ctx.start_clock(S["partial_hold"])
    sel = selectors.DefaultSelector()
    opened = done = closed = 0
    replies = Counter()
    pushed = 0
    for _ in range(n):
        try:
            s = socket.create_connection(("127.0.0.1", ctx.port), timeout=5)
            s.setblocking(False)
        except OSError as e:
            ctx.tally.failure(f"connect: {type(e).__name__}")
            continue
        opened += 1
        sel.register(s, selectors.EVENT_WRITE | selectors.EVENT_READ, [0, b""])
    t_sent = None
    while not ctx.over():
        for key, ev in sel.select(0.1):
            s, state = key.fileobj, key.data
            if ev & selectors.EVENT_READ:
                try:
                    chunk = s.recv(65536)
                except OSError:
                    chunk = b""
                if chunk:
                    state[1] += chunk
                    continue
                m = ERROR_RE.search(state[1])
                replies[reason(m.group(1)) if m else "closed without a reply"] += 1
                ctx.tally.errors_in(state[1])
                sel.unregister(s)
                s.close()
                closed += 1
                continue
            if ev & selectors.EVENT_WRITE:
                try:
                    k = s.send(data[state[0]:])
                except BlockingIOError:
                    continue
                except OSError:
                    k = 0
                pushed += k
                state[0] += k
                if state[0] >= len(data):
                    done += 1
                    sel.modify(s, selectors.EVENT_READ, state)
                    if done == opened:
                        t_sent = S["partial_hold"] - ctx.left()
    for key in list(sel.get_map().values()):
        key.fileobj.close()
    sel.close()
    ctx.tally.sent += pushed
    ctx.notes.append(f"{opened} connections opened, {done} sent their {len(data) - len(str(size)) - 1:,} bytes "
                     f"({pushed / 1048576:,.0f} MiB in all"
                     + (f", all sent after {t_sent:.1f} s" if t_sent else "")
                     + f"), held {S['partial_hold']} s; {closed} closed by the server"
                     + (": " + ", ".join(f"{k} x{v}" for k, v in replies.items()) if replies else ""))


def a12_admin(ctx):
    idle, trickling = 100, 10
    stopping = threading.Event()
    held = Counter()

    def holder():
        sel = selectors.DefaultSelector()
        request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"

        def open_one(kind):
            try:
                s = socket.create_connection(("127.0.0.1", ctx.admin), timeout=2)
                s.setblocking(False)
                sel.register(s, selectors.EVENT_READ, [kind, 0])
            except OSError:
                held["connect failures"] += 1
        for _ in range(idle):
            open_one("idle")
        for _ in range(trickling):
            open_one("trickle")
        next_byte = time.monotonic()
        while not stopping.is_set():
            for key, _ in sel.select(0.05):
                try:
                    data = key.fileobj.recv(4096)
                except OSError:
                    data = b""
                if data:
                    continue
                sel.unregister(key.fileobj)
                key.fileobj.close()
                held[f"{key.data[0]} closed by the server"] += 1
                open_one(key.data[0])
            if time.monotonic() >= next_byte:
                next_byte += 0.2
                for key in list(sel.get_map().values()):
                    if key.data[0] == "trickle" and key.data[1] < len(request):
                        try:
                            key.fileobj.send(request[key.data[1]:key.data[1] + 1])
                            key.data[1] += 1
                        except OSError:
                            pass
        for key in list(sel.get_map().values()):
            key.fileobj.close()
        sel.close()

    t = threading.Thread(target=holder, daemon=True)
    t.start()
    time.sleep(1.0)  # all of them connected
    ctx.start_clock(S["seconds"])
    lat, statuses = [], Counter()
    while not ctx.over():
        t0 = time.monotonic()
        try:
            status, _ = http_get(ctx.admin, "/healthz", timeout=5)
            statuses[str(status)] += 1
        except OSError as e:
            statuses[f"failed ({type(e).__name__}: {str(e)[:40]})"] += 1
        lat.append((time.monotonic() - t0) * 1000)
        time.sleep(max(0.0, 0.05 - (time.monotonic() - t0)))
    stopping.set()
    t.join()
    lat.sort()
    ctx.health = {"n": len(lat), "p50": pct(lat, 50), "p99": pct(lat, 99), "max": lat[-1] if lat else 0,
                  "statuses": dict(statuses)}
    ctx.notes.append(f"{idle} idle and {trickling} trickling admin connections (reopened when closed: "
                     + ", ".join(f"{k} {v}" for k, v in held.items()) + "); "
                     f"/healthz every 50 ms: {len(lat)} probes, p50 {ctx.health['p50']:.1f} ms, "
                     f"p99 {ctx.health['p99']:.1f} ms, max {ctx.health['max']:.1f} ms, status "
                     + ", ".join(f"{k} x{v}" for k, v in statuses.items()))


def stall(ctx, table):
    """Holds LOCK TABLE `table` for the stall time while a client writes; readiness timings."""
    hold = S["stall_hold"]
    stopping = threading.Event()
    fresh = iter(range(10 ** 9))

    def writer():
        s = None
        while not stopping.is_set():
            t0 = time.monotonic()
            try:
                if s is None:
                    s = Session(ctx.port)
                xml = create(account_xml(str(13000000 + next(fresh)), "1"))
                if ctx.send(xml, s) is None:
                    s.close()
                    s = None
            except (OSError, WireError):
                ctx.tally.failure("writer could not connect")
                s = None
            stopping.wait(max(0.0, 0.1 - (time.monotonic() - t0)))
        if s:
            s.close()

    w = threading.Thread(target=writer, daemon=True)
    w.start()
    time.sleep(1.0)
    psql = subprocess.Popen([PSQL, "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", ctx.db],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    ctx.psql = psql
    try:
        psql.stdin.write(f"BEGIN;\nLOCK TABLE {table} IN ACCESS EXCLUSIVE MODE;\nSELECT 'locked';\n")
        psql.stdin.flush()
        line = psql.stdout.readline().strip()
        if line != "locked":
            raise RuntimeError(f"psql could not lock {table}: {line}")
        t_lock = time.monotonic()
        ctx.start_clock(hold)
        non200_after, why = None, ""
        changes, last = [], 200
        while not ctx.over():
            try:
                status, body = http_get(ctx.admin, "/healthz", timeout=5)
            except OSError as e:
                status, body = 0, str(e)
            if status != 200 and non200_after is None:
                non200_after, why = time.monotonic() - t_lock, body.strip()
            if status != last:
                changes.append(f"{status} at {time.monotonic() - t_lock:.1f} s")
                last = status
            time.sleep(0.1)
        psql.stdin.write("ROLLBACK;\n")
        psql.stdin.close()
        psql.wait(timeout=30)
        ctx.ended_at = time.monotonic()   # the stall is over: readiness and lag are timed from here
    finally:
        if psql.poll() is None:
            psql.kill()
            psql.wait()
    stopping.set()
    w.join()
    ctx.ready = {"non200_after": non200_after, "why": why, "back_after": None}
    ctx.notes.append(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE held {hold} s while a session created an "
                     f"account every 100 ms; /healthz non-200 "
                     + (f"after {non200_after:.1f} s ({why[:150]})" if non200_after is not None else "NEVER")
                     + f"; /healthz during the lock: {', '.join(changes) or 'always 200'}")


def a13_projection_stall(ctx):
    stall(ctx, "accounts")


def a14_commit_stall(ctx):
    ctx.judge_probe = False   # its queries wait for the very commits the lock stalls
    stall(ctx, "journal")


ATTACKS = {
    1: ("long id / symbol (10 KB)", a1_long_names, lambda q: []),
    2: ("sweep a huge resting book", a2_sweep, lambda q: []),
    3: ("sustained 10,000-order requests", a3_sustained, lambda q: []),
    4: ("150,000 attributes", a4_attributes, lambda q: ["--max-request-bytes", str(4 << 20)]),
    5: ("reply amplification, non-readers", a5_reply_amplification, lambda q: []),
    6: ("copy amplification (540 KB)", a6_copy_amplification, lambda q: []),
    7: ("accounts/symbols/orders to caps", a7_caps,
        lambda q: ["--max-accounts", "50000", "--max-symbols", "1000", "--max-open-orders", "100000"] if q else []),
    8: ("256 sessions x 1 MiB", a8_big_sessions, lambda q: []),
    9: ("archived-order queries", a9_archived,
        lambda q: ["--closed-orders-cached", "0", "--journal-keep", "1000"]),
    10: ("max-size legitimate requests", a10_max_legit, lambda q: []),
    11: ("1,500 partial 1 MiB requests", a11_partial, lambda q: []),
    12: ("admin port: idle connections", a12_admin, lambda q: []),
    13: ("projection stall (lock accounts)", a13_projection_stall, lambda q: []),
    14: ("commit stall (lock journal)", a14_commit_stall, lambda q: []),
}
S = sizes(False)


def caps_of(flags):
    caps = {"accounts": 1000000, "symbols": 10000, "open": 2000000}
    for flag, key in (("--max-accounts", "accounts"), ("--max-symbols", "symbols"), ("--max-open-orders", "open")):
        if flag in flags:
            caps[key] = int(flags[flags.index(flag) + 1])
    return caps


# ---- running one attack --------------------------------------------------------------------------

class Runner:
    def __init__(self, args, base_url, tmp):
        self.args, self.base_url, self.tmp = args, base_url, tmp
        self.current = None   # (server, probe, ctx) while an attack runs

    def fresh_db(self):
        """The database URL for one attack: a new database unless --db was given."""
        if self.args.db:
            return self.args.db
        parts = urlsplit(self.base_url)
        admin_url = urlunsplit(parts._replace(path="/postgres"))
        subprocess.run([PSQL, "-X", "-q", "-v", "ON_ERROR_STOP=1", admin_url, "-c",
                        f"DROP DATABASE IF EXISTS {FRESH_DB} WITH (FORCE)", "-c", f"CREATE DATABASE {FRESH_DB}"],
                       check=True, stdout=subprocess.DEVNULL,
                       env=dict(os.environ, PGOPTIONS="-c client_min_messages=warning"))
        return urlunsplit(parts._replace(path=f"/{FRESH_DB}"))

    def run(self, num, model):
        name, fn, flags_for = ATTACKS[num]
        flags = flags_for(self.args.quick)
        db = self.fresh_db()
        t_start = time.monotonic()
        server = start_server(db, model, flags, os.path.join(self.tmp, f"server-{num}-{model}.log"))
        probe = monitor = None
        attack_error = None
        zero_after = back_after = None
        load = float("nan")
        probe_summary = {"n": 0, "p50": float("nan"), "p99": float("nan"), "raw_p99": float("nan"),
                         "max": float("nan"), "errors": {}}
        try:
            # The probe's account and resting order; the probe process is forked before any
            # thread of this attack starts.
            one_shot(server.port, frame(create(account_xml(PROBE_ACCOUNT, "1000000")
                                               + shares_xml("PROBE", [(PROBE_ACCOUNT, 100)]))))
            probe_order = opened_ids(one_shot(server.port, frame(tx(PROBE_ACCOUNT, order("PROBE", -1, "999999")))))
            if not probe_order:
                raise RuntimeError("the probe's order was not opened")
            probe = Probe(server.port, probe_order[0])
            monitor = Monitor(server)
            ctx = Ctx(server, monitor, self.args, db)
            ctx.caps = caps_of(flags)
            ctx.psql = None
            ctx.probe = probe
            self.current = (server, ctx)
            time.sleep(0.3)
            log(f"  attacking (server pid {server.pid}, port {server.port}, admin {server.admin}"
                + (f", flags {' '.join(flags)}" if flags else "") + ")")
            try:
                fn(ctx)
            except (Exception, KeyboardInterrupt) as e:
                if isinstance(e, KeyboardInterrupt) or ctx.abort.is_set():
                    ctx.abort.set()   # the attacker's threads see it and end
                    raise KeyboardInterrupt from None
                attack_error = f"{type(e).__name__}: {e}"
            if ctx.ended_at is None:
                ctx.ended_at = time.monotonic()
            load = os.getloadavg()[0]
            probe_summary = probe.stop()
            alive = server.alive()
            log(f"  attack over after {ctx.ended_at - t_start:.0f} s"
                + (f" ({attack_error})" if attack_error else "") + "; waiting for the projection lag to reach zero")
            zero_after, back_after = self.wait_after(ctx, alive)
            if ctx.ready is not None:
                ctx.ready["back_after"] = back_after
        finally:
            if probe:
                probe.stop()
            if monitor:
                monitor.stop()
            status = server.close()
            self.current = None
        r = self.row(num, name, model, ctx, probe_summary, monitor, zero_after, alive, status,
                     attack_error, time.monotonic() - t_start)
        r["load"] = load
        return r

    def wait_after(self, ctx, alive):
        """Seconds from the attack's end until the lag is zero (None: not within 30 s), and for
        the stalls until /healthz is 200 again."""
        zero_after = back_after = None
        deadline = ctx.ended_at + LAG_GOAL_S
        while alive and time.monotonic() < deadline and (zero_after is None or
                                                          (ctx.ready is not None and back_after is None)):
            now = time.monotonic() - ctx.ended_at
            if zero_after is None:
                m = ctx.monitor.sample()
                if m and m.get("exchange_projection_lag_rows", 1) == 0 and \
                        m.get("exchange_projection_lag_entries", 1) == 0:
                    zero_after = now
            if ctx.ready is not None and back_after is None:
                try:
                    if http_get(ctx.admin, "/healthz", timeout=3)[0] == 200:
                        back_after = now
                except OSError:
                    pass
            time.sleep(0.1)
        if ctx.ready is not None and back_after is None and alive:
            # Readiness may lag the projection a little: give it the rest of another 30 s.
            while time.monotonic() < ctx.ended_at + 2 * LAG_GOAL_S:
                try:
                    if http_get(ctx.admin, "/healthz", timeout=3)[0] == 200:
                        back_after = time.monotonic() - ctx.ended_at
                        break
                except OSError:
                    pass
                time.sleep(0.1)
        return zero_after, back_after

    def row(self, num, name, model, ctx, probe, monitor, zero_after, alive, status, attack_error, wall):
        rss_mib = monitor.rss_peak_kib / 1024
        t = ctx.tally
        missed = []
        if not alive:
            missed.append(f"server died (status {ctx.server.proc.returncode})")
        if rss_mib > self.args.rss_budget_mb:
            missed.append(f"RSS {rss_mib:,.0f} > {self.args.rss_budget_mb:,} MiB")
        if ctx.judge_probe:
            if not probe["p99"] <= P99_GOAL_MS:
                missed.append(f"probe p99 {probe['p99']:.0f} > {P99_GOAL_MS:.0f} ms")
            if probe["errors"]:
                missed.append(f"probe errors {sum(probe['errors'].values())}")
        if t.over_budget:
            missed.append(f"{t.over_budget} replies > 64x and > 64 KiB")
        if zero_after is None:
            missed.append(f"lag not zero within {LAG_GOAL_S:.0f} s")
        if ctx.ready is not None:
            na = ctx.ready["non200_after"]
            if na is None or na > READY_GOAL_S:
                missed.append("/healthz not non-200 within 15 s")
        if ctx.health is not None:
            bad = sum(v for k, v in ctx.health["statuses"].items() if k != "200")
            if bad or not ctx.health["p99"] <= P99_GOAL_MS:
                missed.append(f"/healthz: {bad} not 200, p99 {ctx.health['p99']:.0f} ms")
        if attack_error:
            missed.append(f"attack failed: {attack_error}")
        return {
            "num": num, "attack": name, "model": model, "rss_mib": rss_mib, "probe": probe,
            "judge_probe": ctx.judge_probe, "requests": t.requests, "sent": t.sent, "received": t.received,
            "max_ratio": t.max_ratio, "max_ratio_of": t.max_ratio_of, "over_budget": t.over_budget,
            "refused": sum(t.errors.values()), "reasons": dict(t.errors.most_common()),
            "failures": dict(t.failures), "lag_rows_peak": monitor.lag_rows_peak,
            "lag_entries_peak": monitor.lag_entries_peak, "lag_s_peak": monitor.lag_s_peak,
            "zero_after": zero_after, "ready": ctx.ready, "health": ctx.health, "notes": ctx.notes,
            "exit_status": status, "scrape_failures": monitor.scrape_failures, "wall_s": wall,
            "at_bound": monitor.at_bound / max(monitor.samples, 1), "queue_peak": monitor.queue_peak,
            "commit_stalled_peak": monitor.commit_stalled_peak,
            "verdict": "OK" if not missed else "MISSED: " + "; ".join(missed),
        }

    def interrupt(self):
        """Ctrl-C: stop what runs now (the caller's finally blocks do the rest)."""
        if self.current:
            server, ctx = self.current
            ctx.abort.set()
            if ctx.psql and ctx.psql.poll() is None:
                ctx.psql.kill()
            if ctx.probe:
                ctx.probe.stop_event.set()
            server.close()


# ---- output -----------------------------------------------------------------------------------

HEAD = (f"{'#':>2}  {'attack':<34} {'model':<8} {'RSS MiB':>8} {'p50 ms':>7} {'p99 ms':>7} {'p.err':>5} "
        f"{'reply/req':>9} {'refused':>8} {'lag rows':>9} {'zero s':>6}  verdict")

LEGEND = f"""\
columns:
  RSS MiB    the server's peak resident memory during the attack and the wait after it (VmRSS every
             50 ms and the kernel's VmHWM); goal <= the budget (--rss-budget-mb)
  p50, p99   latency of the probe client (its own process, a persistent session, one <query> of its
             own resting order every 10 ms, the next as soon as the reply is in if that is later),
             during the attack, with HdrHistogram's correction for coordinated omission (a query
             that took L ms also counts L-10, L-20, ... ms: the queries it held up); goal p99 <=
             {P99_GOAL_MS:.0f} ms (in parentheses where not judged: the commit stall)
  p.err      probe requests that failed or got an <error>; goal 0
  reply/req  the largest reply / request size (XML bytes) the attacker saw; goal: every reply
             <= 64x its request, or <= 64 KiB (what --max-reply-ratio always allows), else refused
  refused    <error> elements the attacker received (item errors and whole-request refusals),
             by reason below each row
  lag rows   peak of exchange_projection_lag_rows on /metrics (rows waiting to be projected)
  zero s     seconds from the attack's end until the lag (rows and entries) was zero; goal <= 30
  verdict    OK, or MISSED and which goal
below each row: the attacker's bytes, the probe's p99 without the correction and its slowest
query, how long /metrics showed the projection within one write of its 1,000,000-row bound (where
the group commit, and so every reply, waits for the projector), the pool's peak queue, the
longest commit; in 13 and 14 the readiness: seconds from the lock to the first non-200 /healthz
(goal <= 15) and from the release to 200 again; in 12 the /healthz probes (goal: all 200, p99
<= 250 ms); the load average (other jobs share the machine)"""


def fmt(x, spec, nan="-"):
    return nan if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def print_row(r):
    p = r["probe"]
    p99 = fmt(p["p99"], ".1f") if r["judge_probe"] else "(" + fmt(p["p99"], ".0f") + ")"
    print(f"{r['num']:>2}  {r['attack']:<34} {r['model']:<8} {r['rss_mib']:>8,.0f} {fmt(p['p50'], '.1f'):>7} "
          f"{p99:>7} {sum(p['errors'].values()):>5} {r['max_ratio']:>9.1f} {r['refused']:>8,} "
          f"{r['lag_rows_peak']:>9,.0f} {fmt(r['zero_after'], '.1f'):>6}  {r['verdict']}", flush=True)


def print_details(r):
    p = r["probe"]
    lines = [f"requests {r['requests']:,}, sent {r['sent'] / 1048576:,.1f} MiB, received "
             f"{r['received'] / 1048576:,.1f} MiB; largest ratio {r['max_ratio_of'][1]:,} / "
             f"{r['max_ratio_of'][0]:,} bytes; probe {p['n']:,} queries, p99 of the queries alone "
             f"{fmt(p['raw_p99'], '.1f')} ms, max {fmt(p['max'], '.0f')} ms; "
             f"lag peak {r['lag_entries_peak']:,.0f} entries, {r['lag_s_peak']:.1f} s"
             + (f", within 100,000 rows of the 1,000,000-row bound (commits wait) in {r['at_bound']:.0%} of "
                f"the scrapes" if r["at_bound"] else "")
             + (f"; server queue peak {r['queue_peak']:,.0f} requests" if r["queue_peak"] else "")
             + (f"; longest commit {r['commit_stalled_peak']:.1f} s" if r["commit_stalled_peak"] >= 0.1 else "")
             + f"; server exit {r['exit_status']}; {r['wall_s']:.0f} s; load average {r['load']:.1f} at the end"]
    if r["reasons"]:
        lines.append("refused: " + "; ".join(f"{k} x{v:,}" for k, v in r["reasons"].items()))
    if r["failures"]:
        lines.append("attacker saw: " + "; ".join(f"{k} x{v:,}" for k, v in r["failures"].items()))
    if p["errors"]:
        lines.append("probe errors: " + "; ".join(f"{k} x{v:,}" for k, v in p["errors"].items()))
    if r["ready"]:
        na, back = r["ready"]["non200_after"], r["ready"]["back_after"]
        lines.append(f"readiness: non-200 {fmt(na, '.1f', 'never')} s after the lock (goal <= 15), "
                     f"200 again {fmt(back, '.1f', 'not within 60')} s after the release")
    lines += r["notes"]
    for line in lines:
        print(f"      {line}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="shorter, smaller attacks (about 2 minutes in all)")
    ap.add_argument("--only", help="comma-separated attack numbers (default: all, 1-14)")
    ap.add_argument("--models", default="pool", help="comma-separated concurrency models (default pool)")
    ap.add_argument("--db", help="database URL (default: a private PostgreSQL in .local/abuse-pg, port 25442)")
    ap.add_argument("--rss-budget-mb", type=int, default=RSS_BUDGET_MIB,
                    help=f"the memory budget the peak RSS is judged against, MiB (default {RSS_BUDGET_MIB})")
    ap.add_argument("--json", help="also write every figure here")
    ap.add_argument("--keep-logs", help="copy the servers' logs into this directory")
    args = ap.parse_args()
    try:
        only = sorted({int(x) for x in args.only.split(",") if x.strip()}) if args.only else sorted(ATTACKS)
    except ValueError:
        ap.error("--only takes attack numbers, e.g. 1,5,11")
    if any(n not in ATTACKS for n in only):
        ap.error(f"--only: attacks are numbered 1-{max(ATTACKS)}")
    models = [m for m in args.models.split(",") if m]
    if not os.access(SERVER, os.X_OK):
        ap.error(f"{SERVER} is missing: build it (ninja -C build exchange-server)")
    global S
    S = sizes(args.quick)

    # 1,500 partial requests, 256 sessions, 100 non-readers: descriptors beyond the usual 1024,
    # for this script and the servers it starts.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < min(hard, 8192):
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))

    runner = None
    started_pg = False

    def on_term(signum, frame_):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    results = []
    t0 = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="abuse-")
    try:
        base_url = args.db
        if not base_url:
            log(f"starting PostgreSQL in {os.path.relpath(PG_DIR, ROOT)} on port {PG_PORT}")
            started_pg = True
            base_url = local_pg("start", PG_DIR, PG_PORT)
        runner = Runner(args, base_url, tmp)
        load = os.getloadavg()
        log(f"{len(only)} attacks x {len(models)} model(s), {'quick' if args.quick else 'full'} run; machine "
            f"{os.cpu_count()} cores, load average {load[0]:.1f}; RSS budget {args.rss_budget_mb:,} MiB")
        for model in models:
            for i, num in enumerate(only):
                log(f"[{i + 1}/{len(only)}] attack {num}: {ATTACKS[num][0]} ({model})")
                try:
                    r = runner.run(num, model)
                except Exception as e:  # noqa: BLE001  (one attack that cannot run does not stop the rest)
                    log(f"  -> could not run: {e}")
                    continue
                results.append(r)
                log(f"  -> {r['verdict']}")
    except KeyboardInterrupt:
        print()
        log("interrupted: stopping the server, the probe and PostgreSQL")
        if runner:
            runner.interrupt()
    finally:
        if args.keep_logs:
            os.makedirs(args.keep_logs, exist_ok=True)
            for f in os.listdir(tmp):
                shutil.copy(os.path.join(tmp, f), args.keep_logs)
        shutil.rmtree(tmp, ignore_errors=True)
        if started_pg:
            local_pg("stop", PG_DIR, check=False)
            log("PostgreSQL stopped")

    if results:
        print()
        print(HEAD)
        print("-" * len(HEAD))
        for r in results:
            print_row(r)
        print()
        for r in results:
            print(f"{r['num']:>2}  {r['attack']} ({r['model']}):")
            print_details(r)
        print()
        print(LEGEND)
        ok = sum(r["verdict"] == "OK" for r in results)
        print(f"\nabuse: {ok} of {len(results)} attacks met every goal; {time.monotonic() - t0:.0f} s in all; "
              f"load average now {os.getloadavg()[0]:.1f}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=2, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
