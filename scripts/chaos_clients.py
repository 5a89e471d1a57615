"""The chaos run's clients and their history (scripts/chaos.py; checked by scripts/chaos_check.py).

Each client trades for two accounts of its own (orders that cross and orders that rest, of every
type: limit, IOC and FOK limits, market IOC and FOK, stop-limits near the traded prices; queries,
cancels and replaces of its own orders, PROTOCOL.md sections 4.5-4.8) through one-shot requests or a persistent session, sending each
request to the server that answered as active last and moving on to the other when a server is
unreachable or answers as the standby. Every operation is recorded in history.jsonl with its
invocation, its completion and its outcome:

    ok        a reply with the request's results (child errors from the engine's rules included)
    refused   a request-level error that says nothing was applied (standby, unavailable, not
              applied, busy): the next server is tried, and the last refusal is recorded
    failed    nothing could be sent (no server accepted a connection)
    unknown   sent, and no reply came (the connection broke or the wait timed out), or the reply
              says the outcome is not known. Never sent again: the history must be able to tell
              that it happened at most once.

Every payload carries its operation's tag as an XML comment (`<!--op 17-->`), which the parser
ignores and the journal keeps, so the checker finds each operation's journal entry.
"""
import collections
import json
import random
import re
import socket
import threading
import time

from chaos_check import classify_reply

REPLY_TIMEOUT_S = 20.0  # longer than a paused server's pause: its reply may still come
CONNECT_TIMEOUT_S = 2.0
# Refusals after which the other server is tried (serving/reply_errors.hpp).
STANDBY_TEXTS = ("is the standby", "took over this database")


class History:
    """history.jsonl, appended by every client thread and the nemesis; each line flushed. The
    last RECENT operations are kept in memory too, for the nemesis's probe (recent_ops)."""

    RECENT = 4096

    def __init__(self, path):
        self._file = open(path, "w")
        self._lock = threading.Lock()
        self._next_op = 0
        self._recent = collections.deque(maxlen=self.RECENT)

    def next_op(self):
        with self._lock:
            self._next_op += 1
            return self._next_op

    def record(self, entry):
        line = json.dumps(entry, sort_keys=True)
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()
            if entry.get("type") == "op":
                self._recent.append(entry)

    def recent_ops(self):
        """The last RECENT operations recorded, oldest first (the records themselves)."""
        with self._lock:
            return list(self._recent)

    def close(self):
        self._file.close()


def tagged(payload, tag):
    """The payload with `<!--TAG-->` right after the root's start tag."""
    end = payload.index(">") + 1
    if payload[end - 2] == "/":
        raise ValueError("an empty root cannot carry a tag")
    return payload[:end] + f"<!--{tag}-->" + payload[end:]


def request_error(reply):
    """The text of a request-level error (`<results><error>TEXT</error></results>`, no
    attributes), or None for a reply with per-child results."""
    m = re.fullmatch(r"\s*(<\?xml[^>]*\?>)?\s*<results>\s*<error>([^<]*)</error>\s*</results>\s*",
                     reply, re.S)
    return m.group(2) if m else None


def classify(reply):
    """ok, refused (and whether the other server should be tried) or unknown, for a reply: the
    checker's own classification (a reply cut short does not parse: unknown)."""
    kind = classify_reply(reply)
    if kind != "refused":
        return kind, False
    return kind, any(s in (request_error(reply) or "") for s in STANDBY_TEXTS)


class Sent(Exception):
    """The request left, and no reply came: the outcome is unknown."""


def read_exact(sock, n):
    chunks = []
    while n:
        data = sock.recv(min(n, 65536))
        if not data:
            raise Sent("the connection closed before the reply")
        chunks.append(data)
        n -= len(data)
    return b"".join(chunks)


def read_line(sock):
    line = b""
    while not line.endswith(b"\n"):
        data = sock.recv(1)
        if not data:
            raise Sent("the connection closed before the reply")
        line += data
        if len(line) > 64:
            raise Sent(f"not a frame: {line!r}")
    return line.decode()


class Connection:
    """One server: one-shot requests on a connection each, or one persistent session."""

    def __init__(self, port, persistent):
        self.port, self.persistent = port, persistent
        self.sock = None

    def close(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None

    def _connect(self):
        """Raises OSError if the server cannot be reached (nothing was sent)."""
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=CONNECT_TIMEOUT_S)
        sock.settimeout(REPLY_TIMEOUT_S)
        if self.persistent:
            try:
                sock.sendall(b"EXCHANGE-SESSION 1\n")
                if read_line(sock) != "EXCHANGE-SESSION 1 OK\n":
                    raise OSError("no persistent session")
            except (Sent, OSError) as e:
                sock.close()
                raise OSError(str(e))
        return sock

    def request(self, payload):
        """The reply; OSError if nothing was sent; Sent if sent without a reply."""
        if self.sock is None or not self.persistent:
            self.close()
            self.sock = self._connect()
        data = payload.encode()
        try:
            self.sock.sendall(str(len(data)).encode() + b"\n" + data)
        except OSError as e:
            # A persistent session may have died since its last reply: what was sent is unknown.
            self.close()
            raise Sent(f"sending failed: {e}")
        try:
            if self.persistent:
                size = int(read_line(self.sock))
                return read_exact(self.sock, size).decode()
            self.sock.shutdown(socket.SHUT_WR)
            chunks = []
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
            self.close()
            if not chunks:
                raise Sent("the connection closed without a reply")
            return b"".join(chunks).decode()
        except (OSError, ValueError) as e:
            self.close()
            raise Sent(str(e))
        except Sent:
            self.close()
            raise


class Client(threading.Thread):
    """Trades until `stop` is set; records each operation in `history`."""

    def __init__(self, index, accounts, symbols, ports, history, seed, persistent, stop):
        super().__init__(daemon=True, name=f"client-{index}")
        self.index, self.accounts, self.symbols = index, accounts, symbols
        self.history, self.stop_event = history, stop
        self.rng = random.Random(seed)
        self.conns = [Connection(p, persistent) for p in ports]
        self.active = 0  # index into conns of the server that answered as active last
        self.open_orders = {a: [] for a in accounts}  # ids acknowledged as opened
        self.terms = {}  # of each of those: its limit, open remainder as last known, rests?
        self.ops = 0

    def run(self):
        while not self.stop_event.is_set():
            self.one_op()
            self.stop_event.wait(self.rng.uniform(0.005, 0.05))
        for c in self.conns:
            c.close()

    def one_op(self):
        account = self.rng.choice(self.accounts)
        mine = self.open_orders[account]
        resting = [n for n in mine if self.terms[n]["rests"]]
        r = self.rng.random()
        if resting and r < 0.15:
            kind, child = "cancel", f'<cancel id="{self.rng.choice(resting)}"/>'
        elif mine and r < 0.35:
            kind, child = "query", f'<query id="{self.rng.choice(mine)}"/>'
        elif resting and r < 0.43:
            # The newest: an older one has likely filled since (the book is thin near 100).
            kind, child = "replace", self.replace(self.rng.choice(resting[-5:]))
        else:
            kind, child = "order", self.order()
        self.perform(kind, account, f'<transactions id="{account}">{child}</transactions>')

    # The share of each order type (PROTOCOL 4.5-4.7), drawn per order: the rest plain limits.
    ORDER_TYPES = (("ioc", 0.12), ("fok", 0.06), ("market-ioc", 0.08), ("market-fok", 0.04),
                   ("stop", 0.10))

    def order_type(self):
        r = self.rng.random()
        for name, share in self.ORDER_TYPES:
            if r < share:
                return name
            r -= share
        return "limit"

    def order(self):
        sym = self.rng.choice(self.symbols)
        amount = self.rng.randint(1, 10) * self.rng.choice((1, -1))
        # Around 100: buys and sells cross about half the time, the rest rest on the book.
        limit = self.rng.randint(95, 105)
        kind = self.order_type()
        head = f'<order sym="{sym}" amount="{amount}"'
        if kind == "limit":
            return f'{head} limit="{limit}"/>'
        if kind in ("ioc", "fok"):
            return f'{head} limit="{limit}" tif="{kind.upper()}"/>'
        if kind.startswith("market-"):
            return f'{head} tif="{kind[7:].upper()}"/>'
        return f'{head} {self.stop_terms(amount > 0)}/>'

    def stop_terms(self, buy):
        """A stop near the traded prices (95-105), so that some trigger: a buy stop at 99-104
        with its limit 0-2 above, a sell stop at 96-101 with its limit 0-2 below."""
        if buy:
            stop = self.rng.randint(99, 104)
            return f'limit="{stop + self.rng.randint(0, 2)}" stop="{stop}"'
        stop = self.rng.randint(96, 101)
        return f'limit="{stop - self.rng.randint(0, 2)}" stop="{stop}"'

    def replace(self, order_id):
        """A <replace> of one of the account's own resting orders: half the time the same limit
        with a smaller remainder than last known (keeps priority, unless fills made it larger
        than what is left), else another limit and any remainder (loses priority, may match)."""
        terms = self.terms[order_id]
        known_open = terms["open"]
        if known_open > 1 and self.rng.random() < 0.5:
            return (f'<replace id="{order_id}" shares="{self.rng.randint(1, known_open - 1)}" '
                    f'limit="{terms["limit"]}"/>')
        limit = terms["limit"] + self.rng.choice((-2, -1, 1, 2))
        return f'<replace id="{order_id}" shares="{self.rng.randint(1, 10)}" limit="{limit}"/>'

    def perform(self, kind, account, payload):
        op = self.history.next_op()
        tag = f"op {op}"
        payload = tagged(payload, tag)
        invoke = time.time()
        outcome, reply, server = self.send(payload)
        self.history.record({"type": "op", "op": op, "client": self.index, "kind": kind,
                             "account": account, "payload": payload, "tag": tag,
                             "invoke": invoke, "complete": time.time(), "outcome": outcome,
                             "reply": reply, "server": server,
                             "session": "persistent" if self.conns[0].persistent else "one-shot"})
        self.ops += 1
        if outcome == "ok":
            self.note(account, reply)

    def send(self, payload):
        """(outcome, reply or None, "127.0.0.1:PORT" or None), trying each server once from the
        one that answered as active last."""
        outcome, last_reply, last_server = "failed", None, None
        for i in range(len(self.conns)):
            n = (self.active + i) % len(self.conns)
            conn = self.conns[n]
            server = f"127.0.0.1:{conn.port}"
            try:
                reply = conn.request(payload)
            except Sent:
                return "unknown", None, server
            except OSError:
                continue  # not reachable: nothing was sent
            kind, try_other = classify(reply)
            if kind != "refused":
                self.active = n
                return kind, reply, server
            outcome, last_reply, last_server = "refused", reply, server
            if not try_other:
                return outcome, last_reply, last_server
        return outcome, last_reply, last_server

    def note(self, account, reply):
        """What the reply tells of the account's orders: ids opened (with their terms, echoed by
        <opened>), canceled, replaced, refused as closed, and what a <status> shows open."""
        for attrs in tags_of(reply, "opened"):
            order_id = int(attrs["id"])
            self.open_orders[account].append(order_id)
            self.terms[order_id] = {"limit": int(attrs.get("limit", 0)),
                                    "open": abs(int(attrs["amount"])),
                                    "rests": attrs.get("tif", "GTC") == "GTC"}
        for attrs in tags_of(reply, "canceled"):
            if "id" in attrs and int(attrs["id"]) in self.terms:
                self.terms[int(attrs["id"])]["rests"] = False
        for attrs in tags_of(reply, "replaced"):
            if int(attrs["id"]) in self.terms:
                self.terms[int(attrs["id"])].update(open=int(attrs["shares"]),
                                                    limit=int(attrs["limit"]))
        for m in re.finditer(r'<error id="(\d+)"[^>]*>(Order has nothing open|No such order)',
                             reply):
            if int(m.group(1)) in self.terms:   # closed (or forgotten, once closed)
                self.terms[int(m.group(1))]["rests"] = False
        for status in re.finditer(r'<status id="(\d+)">(.*?)</status>|<status id="(\d+)"/>',
                                  reply, re.S):
            self.note_status(int(status.group(1) or status.group(3)), status.group(2) or "")
        # Keep the lists short: old ids are as good to query as new ones.
        for order_id in self.open_orders[account][:-50]:
            self.terms.pop(order_id, None)
        del self.open_orders[account][:-50]

    def note_status(self, order_id, body):
        if order_id not in self.terms:
            return
        shown = re.search(r'<(open|waiting) shares="(\d+)"', body)
        if shown:
            self.terms[order_id]["open"] = int(shown.group(2))
        else:
            self.terms[order_id]["rests"] = False


def tags_of(reply, name):
    """The attributes of each <NAME ...> element of a reply, as a dict."""
    return [dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
            for m in re.finditer(rf"<{name}\b([^>]*)>", reply)]
