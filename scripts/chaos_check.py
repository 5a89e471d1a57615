#!/usr/bin/env python3
"""Checks a chaos run (issue 41): from the history of client operations a runner recorded while
a nemesis injected faults, and from the state read once everything healed, it proves that
nothing acknowledged was lost, nothing refused happened, and nothing unknown happened twice.

    scripts/chaos_check.py RUN_DIR

Prints a report (the seed; ops by kind and outcome; faults injected by kind; the probe's
queries to a paused old leader by outcome, if any; takeovers and the other events; then every
anomaly and "anomalies: N") and exits 0 when there is no anomaly, 1 when there is one, 2 when
RUN_DIR cannot be read (a file missing, bad JSON, a record without a field it needs). The runner calls `check(run_dir)` and reads `Report.anomalies` (each has
`.kind`, `.message`, `.ops` and `.nearby`). Python 3.11, standard library only.

Input: RUN_DIR holds JSON files.

history.jsonl: one JSON object a line, in the order recorded.
  {"type": "meta", "seed": 42, "started": UNIX_SECONDS, ...}         first line; other keys kept
  {"type": "op", "op": 17, "client": 3, "kind": "order"|"replace"|"cancel"|"query"|"create",
   "account": "1003", "payload": "<transactions id=\\"1003\\"><!--op 17-->...</transactions>",
   "tag": "op 17", "invoke": UNIX_SECONDS, "complete": UNIX_SECONDS,
   "outcome": "ok"|"refused"|"failed"|"unknown", "reply": "<results>...</results>" or null,
   "server": "127.0.0.1:24001", "probe": 3}
        "probe" only on a query the nemesis's probe wrote to a paused old leader (its number;
        "invoke" is when it was written, before the resume): judged like any other query, and
        counted in the report ("probe queries: N sent, ...")
  {"type": "fault", "t": UNIX_SECONDS, "kind": "kill-active"|..., "action": "inject"|"heal",
   "target": "...", "detail": "..."}
  {"type": "event", "t": UNIX_SECONDS, "what": "takeover"|"promotion"|..., "detail": "..."}
  Every payload carries its op's tag, unique in the history, as the XML comment <!--op N-->
  right after the root's start tag; the server ignores comments and its journal keeps the
  payload verbatim, so the tag finds the op's journal entry. Outcomes:
    ok       a <results> reply of per-child results (<opened>, <created>, <status>,
             <canceled>, <replaced>, or a child <error ...> that changed nothing);
    refused  a reply of a single <error> without attributes: nothing was applied;
    failed   nothing was sent (no connection);
    unknown  sent without a reply, or a single attribute-less <error> saying the outcome is
             unknown: its text contains "unknown" or "query your orders" (the server's words
             for it, server/serving/reply_errors.hpp).
  The checker classifies every recorded reply itself (`classify_reply`, which the runner may
  use too). When the recorded outcome contradicts it, that is an anomaly (outcome-mismatch)
  and the checks go on with the reply's outcome (unknown where the reply is missing).

final.json: the state read after everything healed; decimals as strings ("101.5").
  {"journal": [{"seq": 1, "at": UNIX_SECONDS, "request": "..."}, ...],   whole, in seq order
   "orders": [{"id", "account_id", "symbol", "amount", "limit_price" (null: a market order),
               "open_amount", "created_at", "canceled_at" (null or int), "execution_ids": [...],
               "stop_price" (optional; null, or a stop order's stop while it waits)}, ...],
   "executions": [{"id", "buy_order", "sell_order", "shares", "price", "executed_at"}, ...],
   "accounts": [{"id", "balance", "deposited"}, ...],
   "positions": [{"account_id", "symbol", "amount", "granted"}, ...],
   "symbols": ["S1", ...]}

replayed.json (optional): {"op 17": "<results>...</results>", ...}, the reply the engine's
  own rules give each journaled request when the journal is replayed in order.
replayed_state.json, queries.json (optional): the state that replay ends in, and the final
  state queried through the protocol (scripts/chaos_check_state.py).

Checks, each anomaly by its kind (op times are printed relative to meta's "started", with the
faults and events from 5 s before the first op's invoke to 5 s after the last one's complete):
  outcome-mismatch         a recorded outcome the recorded reply contradicts
  bad-journal-tag          a journal entry whose request carries no tag, or more than one
  journal-from-nowhere     a journal entry whose tag is no op of the history
  journal-request-differs  a journal entry whose request is not its op's payload
  duplicate-application    a tag in two or more journal entries
  lost-ack                 an ok op that changed something (a reply child <opened>, <created>
                           or <canceled>, or a <replaced> with another limit than the order
                           had: one that asks for what the order has changes nothing and is
                           not journaled) in no journal entry
  refused-applied          a refused op in the journal
  failed-applied           a failed op (never sent) in the journal
  lost-order               an ok <opened id=N> with no order N in the final state
  order-mismatch           order N there with another account (the payload's root id), symbol,
                           amount, limit (null for a market order) or stop (while it waits)
                           than <opened> said; for an order a journaled <replace> changed, the
                           side <opened> said, the limit of the last <replaced> and an amount
                           of its shares plus at most what the order executed
  order-id-reused          one order id in two <opened> replies
  order-from-nowhere       an order no ok reply opened and no journaled unknown op can have
                           placed (same account, symbol, amount, limit, created_at = its at)
  lost-cancel              an ok <canceled id=N> whose order N is not canceled
  wrong-cancel             a <canceled time=T> (reply of a cancel or a query) for an order whose
                           canceled_at is not T
  wrong-fill               an <executed shares price time> in an ok <status id=N> or
                           <canceled id=N> with no such execution of order N (one listed in its
                           execution_ids, with N its buy_order or sell_order)
  cash-not-conserved       sum(deposited) != sum(balance) + open buys' open_amount * limit (a
                           waiting stop reserves as an open order; a market order never rests)
  shares-not-conserved     for a symbol, sum(granted) != sum(amount) + open sells' open_amount
  negative-balance, negative-position, bad-open-amount (not within 0..abs(amount))
  replay-differs           an ok op whose reply differs from replayed.json's for its tag
                           (compared as XML: names, attributes and text; no whitespace,
                           declaration or comments)
  state-differs, query-differs, stale-read: scripts/chaos_check_state.py, from the optional
                           replayed_state.json and queries.json described there, and the
                           history's query replies
Unknown ops are allowed in the journal once or not at all: the report counts both.
Decimals are compared as decimal.Decimal ("101.50" == "101.5"), never as floats.
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import decimal
import json
import os
import re
import sys
import xml.etree.ElementTree as ET
from decimal import Decimal
from typing import Any, Callable, Iterable

WINDOW_SECONDS = 5.0
OUTCOMES = ("ok", "refused", "failed", "unknown")
OP_KINDS = ("order", "replace", "cancel", "query", "create")
CHANGING_CHILDREN = ("opened", "created", "canceled")
# A <replaced> changes something unless it asked for the limit and remainder the order had
# (PROTOCOL 4.8): the engine then changes nothing and the server journals nothing. So a
# <replaced> is held to be journaled only when its limit is not the one the order had
# (surely_changing_replaces).
# What a single attribute-less <error> says when the server does not know whether it applied
# the request: "unknown", or the server's own advice after a broken commit or a failed handler
# (server/serving/reply_errors.hpp, Unknown and HandlerFailed), whose texts do not say "unknown".
# The server's request-level errors whose request may have been applied both end so
# (serving/reply_errors.hpp: a commit whose connection broke, a handler that failed); every other
# attribute-less error ("Unknown root element", "Service unavailable", ...) applied nothing.
UNKNOWN_MARKERS = ("query your orders before retrying",)
TAG_RE = re.compile(r"^\s*(op\s+\d+)\s*$")
# Sums of products of 18-digit decimals need more than Decimal's default 28 digits; an inexact
# result would raise instead of rounding.
EXACT = decimal.Context(prec=200, traps=[decimal.Inexact, decimal.InvalidOperation])


class InputError(Exception):
    """RUN_DIR cannot be read as the module docstring describes."""


# --------------------------------------------------------------------------------------------
# Input


@dataclasses.dataclass
class Op:
    tag: str
    number: int
    client: Any
    kind: str
    account: Any
    payload: str
    invoke: float
    complete: float | None
    recorded: str             # the outcome the runner recorded
    reply: str | None
    server: Any
    outcome: str = ""         # the outcome the checks use (the reply's, when they disagree)
    reply_root: ET.Element | None = None   # the parsed reply of an ok op
    probe: Any = None         # the probe's number, for a query written to a paused old leader

    @property
    def end(self) -> float:
        return self.complete if self.complete is not None else self.invoke


@dataclasses.dataclass
class History:
    meta: dict
    ops: list[Op]
    faults: list[dict]
    events: list[dict]

    @property
    def started(self) -> float:
        if "started" in self.meta:
            return float(self.meta["started"])
        return min((op.invoke for op in self.ops), default=0.0)


def read_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: {e}") from e


def need(record: dict, key: str, where: str) -> Any:
    if key not in record:
        raise InputError(f"{where}: no '{key}'")
    return record[key]


def parse_op(record: dict, where: str) -> Op:
    tag = need(record, "tag", where)
    payload = need(record, "payload", where)
    recorded = need(record, "outcome", where)
    if recorded not in OUTCOMES:
        raise InputError(f"{where}: outcome '{recorded}' is none of {', '.join(OUTCOMES)}")
    carried = tags_in(payload)
    if carried != [tag]:
        raise InputError(f"{where}: the payload carries the tags {carried}, not its tag '{tag}'")
    complete = record.get("complete")
    return Op(tag=tag, number=need(record, "op", where), client=record.get("client"),
              kind=need(record, "kind", where), account=record.get("account"),
              payload=payload, invoke=float(need(record, "invoke", where)),
              complete=None if complete is None else float(complete), recorded=recorded,
              reply=record.get("reply"), server=record.get("server"),
              probe=record.get("probe"))


def load_history(path: str) -> History:
    meta: dict = {}
    ops: list[Op] = []
    faults: list[dict] = []
    events: list[dict] = []
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
    except OSError as e:
        raise InputError(f"{path}: {e}") from e
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(line)
        except ValueError as e:
            raise InputError(f"{where}: {e}") from e
        if not isinstance(record, dict):
            raise InputError(f"{where}: not a JSON object")
        kind = record.get("type")
        if kind == "meta":
            meta = record
        elif kind == "op":
            ops.append(parse_op(record, where))
        elif kind == "fault":
            need(record, "t", where)
            faults.append(record)
        elif kind == "event":
            need(record, "t", where)
            events.append(record)
    seen = collections.Counter(op.tag for op in ops)
    twice = sorted(tag for tag, n in seen.items() if n > 1)
    if twice:
        raise InputError(f"{path}: tags used by more than one op: {', '.join(twice)}")
    return History(meta, ops, faults, events)


# The fields each row of final.json must have, and which of them are numbers ("id" of an
# account is a digit string, not a number: "01234" and "1234" are two accounts).
FINAL_ROWS = {
    "journal": (("seq", "at", "request"), ("seq", "at")),
    "orders": (("id", "account_id", "symbol", "amount", "limit_price", "open_amount",
                "created_at", "canceled_at", "execution_ids"),
               ("id", "amount", "limit_price", "open_amount", "created_at")),
    "executions": (("id", "buy_order", "sell_order", "shares", "price", "executed_at"),
                   ("id", "buy_order", "sell_order", "shares", "price", "executed_at")),
    "accounts": (("id", "balance", "deposited"), ("balance", "deposited")),
    "positions": (("account_id", "symbol", "amount", "granted"), ("amount", "granted")),
}
INTEGER_FIELDS = {"seq", "at", "id", "created_at", "buy_order", "sell_order", "executed_at"}
# Number fields that may be null: a market order's limit (PROTOCOL 4.6).
NULLABLE_FIELDS = {"limit_price"}


def check_rows(path: str, table: str, rows: Any) -> None:
    fields, numbers = FINAL_ROWS[table]
    if not isinstance(rows, list):
        raise InputError(f"{path}: no list '{table}'")
    for index, row in enumerate(rows):
        where = f"{path}: {table}[{index}]"
        if not isinstance(row, dict):
            raise InputError(f"{where}: not a JSON object")
        for field in fields:
            need(row, field, where)
        for field in numbers:
            if row[field] is None and field in NULLABLE_FIELDS:
                continue
            whole = field in INTEGER_FIELDS
            if (as_int if whole else dec)(row[field]) is None:
                kind = "a whole number" if whole else "a number"
                raise InputError(f"{where}: {field} {row[field]!r} is not {kind}")


def load_final(path: str) -> dict:
    final = read_json(path)
    if not isinstance(final, dict):
        raise InputError(f"{path}: not a JSON object")
    for table in FINAL_ROWS:
        check_rows(path, table, final.get(table))
    final.setdefault("symbols", [])
    return final


def load_optional(path: str) -> dict | None:
    if not os.path.exists(path):
        return None
    replayed = read_json(path)
    if not isinstance(replayed, dict):
        raise InputError(f"{path}: not a JSON object")
    return replayed


# --------------------------------------------------------------------------------------------
# XML and numbers


def parse_xml(text: str) -> ET.Element:
    """The document's root element, comments inside it kept as ET.Comment elements."""
    parser = ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))
    parser.feed(text.encode("utf-8"))
    return parser.close()


def elements(parent: ET.Element) -> list[ET.Element]:
    """The child elements of `parent`, comments left out."""
    return [child for child in parent if isinstance(child.tag, str)]


def tags_in(request: str) -> list[str]:
    """The op tags (<!--op N-->) a request carries, normalised to "op N"."""
    try:
        root = parse_xml(request)
        comments = [node.text or "" for node in root.iter() if node.tag is ET.Comment]
    except ET.ParseError:
        comments = re.findall(r"<!--(.*?)-->", request, re.S)
    tags = []
    for text in comments:
        match = TAG_RE.match(text)
        if match:
            tags.append(" ".join(match.group(1).split()))
    return tags


def canonical(node: ET.Element) -> tuple:
    """What two XML documents must share to be the same reply."""
    return (node.tag, tuple(sorted(node.attrib.items())), (node.text or "").strip(),
            tuple(canonical(child) for child in elements(node)))


def same_xml(a: str, b: str) -> bool:
    try:
        return canonical(parse_xml(a)) == canonical(parse_xml(b))
    except ET.ParseError:
        return a == b


def dec(value: Any) -> Decimal | None:
    """A decimal of the input (a string or an int), None when it is not a number."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = Decimal(str(value))
    except decimal.InvalidOperation:
        return None
    return number if number.is_finite() else None


def same_decimal(a: Any, b: Any) -> bool:
    x, y = dec(a), dec(b)
    return x is not None and y is not None and x == y


def same_optional(a: Any, b: Any) -> bool:
    """Two decimals that may be absent (a market order's limit, a stop): both absent or equal."""
    if a is None or b is None:
        return a is None and b is None
    return same_decimal(a, b)


def as_int(value: Any) -> int | None:
    number = dec(value)
    if number is None or number != number.to_integral_value():
        return None
    return int(number)


def classify_reply(reply: str | None) -> str | None:
    """The outcome a reply means: "ok", "refused" or "unknown"; None without a reply."""
    if reply is None:
        return None
    try:
        root = parse_xml(reply)
    except ET.ParseError:
        return "unknown"
    if root.tag != "results":
        return "unknown"
    children = elements(root)
    if len(children) == 1 and children[0].tag == "error" and not children[0].attrib:
        text = (children[0].text or "").lower()
        return "unknown" if any(m in text for m in UNKNOWN_MARKERS) else "refused"
    return "ok"


def payload_root(op: Op) -> ET.Element | None:
    try:
        return parse_xml(op.payload)
    except ET.ParseError:
        return None


# --------------------------------------------------------------------------------------------
# The anomalies and the context the checks share


@dataclasses.dataclass
class Anomaly:
    kind: str
    message: str
    ops: list[Op] = dataclasses.field(default_factory=list)
    nearby: list[dict] = dataclasses.field(default_factory=list)  # faults and events


class Context:
    """The history, the final state and the indexes the checks look things up in."""

    def __init__(self, history: History, final: dict, replayed: dict | None,
                 replayed_state: dict | None = None, queries: dict | None = None):
        self.history = history
        self.final = final
        self.replayed = replayed
        self.replayed_state = replayed_state   # chaos_check_state.py's inputs
        self.queries = queries
        self.ops_by_tag = {op.tag: op for op in history.ops}
        self.journal = final["journal"]
        self.journal_by_tag: dict[str, list[dict]] = collections.defaultdict(list)
        for entry in self.journal:
            for tag in set(tags_in(str(entry.get("request", "")))):
                self.journal_by_tag[tag].append(entry)
        self.orders = {as_int(o.get("id")): o for o in final["orders"]}
        self.executions = {as_int(e.get("id")): e for e in final["executions"]}

    def ok_ops(self) -> Iterable[Op]:
        return (op for op in self.history.ops if op.outcome == "ok" and op.reply_root is not None)

    def journaled(self, op: Op) -> int:
        return len(self.journal_by_tag.get(op.tag, []))


def reply_children(op: Op, name: str) -> list[ET.Element]:
    if op.reply_root is None:
        return []
    return [child for child in elements(op.reply_root) if child.tag == name]


def changed_something(op: Op) -> bool:
    return any(reply_children(op, name) for name in CHANGING_CHILDREN)


def payload_children(op: Op, name: str) -> list[ET.Element]:
    root = payload_root(op)
    return [] if root is None else [c for c in elements(root) if c.tag == name]


def order_type(order: ET.Element) -> str:
    """limit, ioc, fok, market-ioc, market-fok or stop (PROTOCOL 4.5-4.7), for the report."""
    if order.get("stop") is not None:
        return "stop"
    tif = (order.get("tif") or "GTC").lower()
    if order.get("limit") is None:
        return f"market-{tif}"
    return "limit" if tif == "gtc" else tif


def describe(node: ET.Element) -> str:
    attrs = " ".join(f'{k}="{v}"' for k, v in node.attrib.items())
    return f"<{node.tag} {attrs}>" if attrs else f"<{node.tag}>"


# --------------------------------------------------------------------------------------------
# Checks: each takes the Context and returns its anomalies


def settle_outcomes(ctx: Context) -> list[Anomaly]:
    """Sets each op's outcome from its reply; a recorded outcome the reply contradicts is an
    anomaly (a reply missing where one was recorded makes the op unknown)."""
    found = []
    for op in ctx.history.ops:
        meant = classify_reply(op.reply)
        if meant is None:
            meant = op.recorded if op.recorded in ("failed", "unknown") else "unknown"
        op.outcome = meant
        if meant == "ok":
            op.reply_root = parse_xml(op.reply)
        if meant != op.recorded:
            why = "no reply" if op.reply is None else f"its reply means {meant}"
            found.append(Anomaly("outcome-mismatch",
                                 f"{op.tag} was recorded {op.recorded} but {why}; checked as "
                                 f"{meant}", [op]))
    return found


def check_journal_entries(ctx: Context) -> list[Anomaly]:
    """Each journal entry carries exactly one tag, of an op of the history, with its payload."""
    found = []
    for entry in ctx.journal:
        request = str(entry.get("request", ""))
        tags = tags_in(request)
        seq = entry.get("seq")
        if len(tags) != 1:
            found.append(Anomaly("bad-journal-tag",
                                 f"journal seq {seq} carries {len(tags)} tags {tags}: "
                                 f"{request[:120]!r}"))
            continue
        op = ctx.ops_by_tag.get(tags[0])
        if op is None:
            found.append(Anomaly("journal-from-nowhere",
                                 f"journal seq {seq} carries {tags[0]}, no op of the history"))
        elif not same_xml(request, op.payload):
            found.append(Anomaly("journal-request-differs",
                                 f"journal seq {seq} is not {op.tag}'s payload: {request[:120]!r}",
                                 [op]))
    return found


def check_duplicates(ctx: Context) -> list[Anomaly]:
    """No tag in two journal entries: a request applied twice."""
    found = []
    for tag, entries in sorted(ctx.journal_by_tag.items(), key=lambda kv: kv[1][0]["seq"]):
        if len(entries) > 1:
            op = ctx.ops_by_tag.get(tag)
            seqs = ", ".join(str(e.get("seq")) for e in entries)
            outcome = op.outcome if op else "no op"
            found.append(Anomaly("duplicate-application",
                                 f"{tag} ({outcome}) is in {len(entries)} journal entries "
                                 f"(seq {seqs})", [op] if op else []))
    return found


def surely_changing_replaces(ctx: Context) -> set[str]:
    """The tags of the ok ops whose <replaced id=N limit=L> gave order N another limit than it
    had: the one of the last ok <opened> or <replaced> of N before it, when no replace of N
    with an unknown outcome came between (the same client places and replaces its orders, one
    op after the other)."""
    limits: dict[int | None, Decimal | None] = {}
    changing = set()
    for op in sorted(ctx.history.ops, key=lambda o: o.invoke):
        if op.outcome == "unknown":
            for child in payload_children(op, "replace"):
                limits[as_int(child.get("id"))] = None
        if op.outcome != "ok":
            continue
        for node in reply_children(op, "opened"):
            limits[as_int(node.get("id"))] = dec(node.get("limit"))
        for node in reply_children(op, "replaced"):
            order_id, limit = as_int(node.get("id")), dec(node.get("limit"))
            if None not in (limits.get(order_id), limit) and limits[order_id] != limit:
                changing.add(op.tag)
            limits[order_id] = limit
    return changing


def check_acknowledged_journaled(ctx: Context) -> list[Anomaly]:
    """An ok op that changed something is in the journal (duplicates: check_duplicates)."""
    found = []
    replaces = surely_changing_replaces(ctx)
    for op in ctx.ok_ops():
        if (changed_something(op) or op.tag in replaces) and ctx.journaled(op) == 0:
            changes = ", ".join(describe(c) for c in elements(op.reply_root)
                                if c.tag in CHANGING_CHILDREN + ("replaced",))
            found.append(Anomaly("lost-ack",
                                 f"{op.tag} was acknowledged with {changes} but is in no "
                                 f"journal entry", [op]))
    return found


def check_refused_not_journaled(ctx: Context) -> list[Anomaly]:
    """A refused op, or a failed one (never sent), is not in the journal."""
    found = []
    for op in ctx.history.ops:
        if op.outcome in ("refused", "failed") and ctx.journaled(op) > 0:
            seqs = ", ".join(str(e.get("seq")) for e in ctx.journal_by_tag[op.tag])
            found.append(Anomaly(f"{op.outcome}-applied",
                                 f"{op.tag} was {op.outcome} but is in the journal (seq {seqs})",
                                 [op]))
    return found


def check_opened_orders(ctx: Context) -> list[Anomaly]:
    """Each ok <opened id=N> is order N of the final state, as the reply and payload say (or
    the last replace of N in the journal: its limit, and its remainder plus what N executed
    before it)."""
    found = []
    replaced = applied_replaces(ctx)
    for op in ctx.ok_ops():
        root = payload_root(op)
        account = root.get("id") if root is not None else op.account
        for opened in reply_children(op, "opened"):
            found += opened_order_anomalies(ctx, op, account, opened, replaced)
    return found


def reply_in_journal_order(ctx: Context, op: Op) -> ET.Element | None:
    """The reply of a journaled op: its own if ok, the replay's if unknown; None if neither."""
    if op.outcome == "ok":
        return op.reply_root
    text = (ctx.replayed or {}).get(op.tag)
    try:
        return None if text is None else parse_xml(text)
    except ET.ParseError:
        return None


def applied_replaces(ctx: Context) -> dict[int | None, tuple | None]:
    """Each order a journaled <replace> changed: the (shares, limit) of the last one, in
    journal order; None when that is not known (an unknown op without a replayed reply)."""
    last: dict[int | None, tuple | None] = {}
    for entry in sorted(ctx.journal, key=lambda e: as_int(e.get("seq")) or 0):
        tags = tags_in(str(entry.get("request", "")))
        op = ctx.ops_by_tag.get(tags[0]) if len(tags) == 1 else None
        if op is None or not payload_children(op, "replace"):
            continue
        reply = reply_in_journal_order(ctx, op)
        if reply is None:
            for child in payload_children(op, "replace"):
                last[as_int(child.get("id"))] = None
            continue
        for node in (c for c in elements(reply) if c.tag == "replaced"):
            last[as_int(node.get("id"))] = (dec(node.get("shares")), dec(node.get("limit")))
    return last


def executed_shares(ctx: Context, order_id: int | None) -> Decimal:
    return sum((shares * n for (shares, _, _), n in fills_of(ctx, order_id).items()
                if shares is not None), Decimal(0))


def terms_differences(ctx: Context, order: dict, opened: ET.Element, replaced: dict) -> list[str]:
    """How order's amount, limit and stop differ from what its <opened> said, or from the last
    replace of it (then only its side is the <opened>'s)."""
    order_id = as_int(order.get("id"))
    wrong = []
    stop = order.get("stop_price")
    if stop is not None and not same_decimal(stop, opened.get("stop")):
        wrong.append(f"stop {stop}")
    if order_id not in replaced:
        if not same_decimal(order.get("amount"), opened.get("amount")):
            wrong.append(f"amount {order.get('amount')}")
        if not same_optional(order.get("limit_price"), opened.get("limit")):
            wrong.append(f"limit {order.get('limit_price')}")
        return wrong
    amount, placed = dec(order.get("amount")), dec(opened.get("amount"))
    if amount is None or placed is None or (amount > 0) != (placed > 0):
        return wrong + [f"amount {order.get('amount')} (not the side it was placed on)"]
    if replaced[order_id] is None:
        return wrong
    shares, limit = replaced[order_id]
    executed = executed_shares(ctx, order_id)
    if shares is None or not shares <= abs(amount) <= shares + executed:
        wrong.append(f"amount {order.get('amount')} (its last replace left {shares} open, and "
                     f"it has executed {executed} in all)")
    if not same_optional(order.get("limit_price"), limit):
        wrong.append(f"limit {order.get('limit_price')} (its last replace set {limit})")
    return wrong


def opened_order_anomalies(ctx: Context, op: Op, account: Any, opened: ET.Element,
                           replaced: dict) -> list[Anomaly]:
    order_id = as_int(opened.get("id"))
    order = ctx.orders.get(order_id)
    if order is None:
        return [Anomaly("lost-order", f"{op.tag} acknowledged {describe(opened)} but there is "
                                      f"no order {opened.get('id')} in the final state", [op])]
    wrong = []
    if str(order.get("account_id")) != str(account):
        wrong.append(f"account {order.get('account_id')} (the request's is {account})")
    if order.get("symbol") != opened.get("sym"):
        wrong.append(f"symbol {order.get('symbol')}")
    wrong += terms_differences(ctx, order, opened, replaced)
    if not wrong:
        return []
    return [Anomaly("order-mismatch", f"{op.tag} acknowledged {describe(opened)} but order "
                                      f"{order_id} has {', '.join(wrong)}", [op])]


def opened_ids(ctx: Context) -> dict[int | None, list[Op]]:
    """Each order id of an ok <opened>, with the ops whose replies carry it."""
    by_id: dict[int | None, list[Op]] = collections.defaultdict(list)
    for op in ctx.ok_ops():
        for opened in reply_children(op, "opened"):
            by_id[as_int(opened.get("id"))].append(op)
    return by_id


def check_order_ids_unique(ctx: Context) -> list[Anomaly]:
    """No order id in two <opened> replies (ids are never reused)."""
    found = []
    by_id = opened_ids(ctx)
    for order_id, ops in sorted(by_id.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)):
        if len(ops) > 1:
            tags = ", ".join(op.tag for op in ops)
            found.append(Anomaly("order-id-reused",
                                 f"order id {order_id} was opened {len(ops)} times ({tags})", ops))
    return found


def unknown_placements(ctx: Context) -> dict[tuple, list[Op]]:
    """The orders the journaled unknown ops may have placed, by (account, symbol, amount,
    limit, created_at), each once for every <order> child."""
    placements: dict[tuple, list[Op]] = collections.defaultdict(list)
    for op in ctx.history.ops:
        entries = ctx.journal_by_tag.get(op.tag, [])
        root = payload_root(op)
        if op.outcome != "unknown" or not entries or root is None:
            continue
        at = as_int(entries[0].get("at"))
        for child in elements(root):
            if child.tag == "order":
                key = (str(root.get("id")), child.get("sym"), dec(child.get("amount")),
                       dec(child.get("limit")), at)
                placements[key].append(op)
    return placements


def check_orders_from_nowhere(ctx: Context) -> list[Anomaly]:
    """Every order of the final state was opened by an ok reply or placed by a journaled
    unknown op (each <order> child of those explains one order)."""
    acknowledged = opened_ids(ctx)
    placements = unknown_placements(ctx)
    found = []
    for order_id, order in sorted(ctx.orders.items()):
        if order_id in acknowledged:
            continue
        key = (str(order.get("account_id")), order.get("symbol"), dec(order.get("amount")),
               dec(order.get("limit_price")), as_int(order.get("created_at")))
        if placements.get(key):
            placements[key].pop(0)
            continue
        found.append(Anomaly("order-from-nowhere",
                             f"order {order_id} (account {key[0]}, {key[1]}, amount "
                             f"{order.get('amount')}, limit {order.get('limit_price')}, created "
                             f"{key[4]}) was opened by no ok reply and placed by no journaled "
                             f"unknown op"))
    return found


def check_cancels(ctx: Context) -> list[Anomaly]:
    """Each ok <canceled id=N> left order N canceled, at the time the reply says."""
    found = []
    for op in ctx.ok_ops():
        for node in reply_children(op, "canceled"):
            order = ctx.orders.get(as_int(node.get("id")))
            if order is None or order.get("canceled_at") is None:
                state = "missing" if order is None else "not canceled"
                found.append(Anomaly("lost-cancel", f"{op.tag} acknowledged {describe(node)} but "
                                                    f"order {node.get('id')} is {state}", [op]))
        for node in reply_children(op, "canceled") + reply_children(op, "status"):
            found += cancel_time_anomalies(ctx, op, node)
    return found


def cancel_time_anomalies(ctx: Context, op: Op, node: ET.Element) -> list[Anomaly]:
    order = ctx.orders.get(as_int(node.get("id")))
    if order is None or order.get("canceled_at") is None:
        return []   # reported as lost-cancel or wrong-fill
    found = []
    for child in elements(node):
        if child.tag == "canceled" and as_int(child.get("time")) != as_int(order["canceled_at"]):
            found.append(Anomaly("wrong-cancel",
                                 f"{op.tag}'s {describe(node)} says {describe(child)} but order "
                                 f"{node.get('id')} was canceled at {order['canceled_at']}", [op]))
    return found


def fills_of(ctx: Context, order_id: int | None) -> collections.Counter:
    """The executions of order `order_id` as (shares, price, time), counted."""
    order = ctx.orders.get(order_id)
    fills: collections.Counter = collections.Counter()
    if order is None:
        return fills
    for exec_id in order.get("execution_ids") or []:
        e = ctx.executions.get(as_int(exec_id))
        if e is not None and order_id in (as_int(e.get("buy_order")), as_int(e.get("sell_order"))):
            fills[(dec(e.get("shares")), dec(e.get("price")), as_int(e.get("executed_at")))] += 1
    return fills


def check_fills(ctx: Context) -> list[Anomaly]:
    """Each <executed> of an ok <status id=N> or <canceled id=N> is an execution of order N."""
    found = []
    for op in ctx.ok_ops():
        for node in reply_children(op, "status") + reply_children(op, "canceled"):
            found += fill_anomalies(ctx, op, node)
    return found


def fill_anomalies(ctx: Context, op: Op, node: ET.Element) -> list[Anomaly]:
    order_id = as_int(node.get("id"))
    stored = fills_of(ctx, order_id)
    shown: collections.Counter = collections.Counter()
    described = {}
    for child in elements(node):
        if child.tag == "executed":
            key = (dec(child.get("shares")), dec(child.get("price")), as_int(child.get("time")))
            shown[key] += 1
            described[key] = describe(child)
    found = []
    for key, count in shown.items():
        if stored[key] < count:
            have = ", ".join(f"{s} @ {p} at {t}" for (s, p, t) in sorted(stored, key=str)) or "none"
            found.append(Anomaly("wrong-fill",
                                 f"{op.tag}'s {describe(node)} shows {described[key]} (x{count}) "
                                 f"but order {node.get('id')}'s executions are: {have}", [op]))
    return found


def open_reserve(orders: Iterable[dict], buys: bool) -> collections.Counter:
    """What open orders reserve: cash of buys (under key None), or shares of sells by symbol."""
    reserved: collections.Counter = collections.Counter()
    for o in orders:
        amount, open_amount = dec(o.get("amount")), dec(o.get("open_amount"))
        if o.get("canceled_at") is not None or amount is None or open_amount is None:
            continue
        if buys and amount > 0:
            reserved[None] += open_amount * (dec(o.get("limit_price")) or Decimal(0))
        elif not buys and amount < 0:
            reserved[o.get("symbol")] += open_amount
    return reserved


def total(rows: Iterable[dict], key: str) -> Decimal:
    return sum((dec(r.get(key)) or Decimal(0) for r in rows), Decimal(0))


def check_conservation(ctx: Context) -> list[Anomaly]:
    """Cash and each symbol's shares are conserved; nothing negative; open within amount."""
    found = []
    with decimal.localcontext(EXACT):
        accounts, positions = ctx.final["accounts"], ctx.final["positions"]
        deposited, balances = total(accounts, "deposited"), total(accounts, "balance")
        held = open_reserve(ctx.final["orders"], buys=True)[None]
        if deposited != balances + held:
            found.append(Anomaly("cash-not-conserved",
                                 f"deposited {deposited} != balances {balances} + open buys "
                                 f"{held} (= {balances + held})"))
        found += share_conservation(ctx, positions)
    return found + sign_anomalies(ctx)


def share_conservation(ctx: Context, positions: list[dict]) -> list[Anomaly]:
    reserved = open_reserve(ctx.final["orders"], buys=False)
    symbols = set(ctx.final["symbols"]) | {p.get("symbol") for p in positions} | set(reserved)
    found = []
    for sym in sorted(symbols, key=str):
        rows = [p for p in positions if p.get("symbol") == sym]
        granted, held = total(rows, "granted"), total(rows, "amount")
        if granted != held + reserved[sym]:
            found.append(Anomaly("shares-not-conserved",
                                 f"{sym}: granted {granted} != positions {held} + open sells "
                                 f"{reserved[sym]} (= {held + reserved[sym]})"))
    return found


def sign_anomalies(ctx: Context) -> list[Anomaly]:
    found = []
    for a in ctx.final["accounts"]:
        if (dec(a.get("balance")) or 0) < 0:
            found.append(Anomaly("negative-balance",
                                 f"account {a.get('id')} balance {a.get('balance')}"))
    for p in ctx.final["positions"]:
        if (dec(p.get("amount")) or 0) < 0:
            found.append(Anomaly("negative-position", f"account {p.get('account_id')} "
                                 f"{p.get('symbol')} amount {p.get('amount')}"))
    for o in ctx.final["orders"]:
        amount, open_amount = dec(o.get("amount")), dec(o.get("open_amount"))
        if amount is None or open_amount is None or not 0 <= open_amount <= abs(amount):
            found.append(Anomaly("bad-open-amount",
                                 f"order {o.get('id')} open_amount {o.get('open_amount')} amount "
                                 f"{o.get('amount')}"))
    return found


def check_replay(ctx: Context) -> list[Anomaly]:
    """Each ok op's reply is the one a replay of the journal gives its request."""
    if ctx.replayed is None:
        return []
    found = []
    for op in ctx.ok_ops():
        expected = ctx.replayed.get(op.tag)
        if expected is not None and not same_xml(op.reply, expected):
            found.append(Anomaly("replay-differs",
                                 f"{op.tag} was answered {compact(op.reply)} but the replay "
                                 f"answers {compact(expected)}", [op]))
    return found


CHECKS: list[Callable[[Context], list[Anomaly]]] = [
    check_journal_entries, check_duplicates, check_acknowledged_journaled,
    check_refused_not_journaled, check_opened_orders, check_order_ids_unique,
    check_orders_from_nowhere, check_cancels, check_fills, check_conservation, check_replay,
]


# --------------------------------------------------------------------------------------------
# The report


def compact(xml_text: str | None, limit: int = 300) -> str:
    if xml_text is None:
        return "nothing"
    text = re.sub(r"<\?xml[^>]*\?>", "", xml_text)
    text = re.sub(r">\s+<", "><", text).strip()
    return text if len(text) <= limit else text[:limit] + "..."


@dataclasses.dataclass
class Report:
    history: History
    anomalies: list[Anomaly]
    unknown_journaled: int
    unknown_not_journaled: int
    stale_tags: set = dataclasses.field(default_factory=set)  # every query found stale

    @property
    def seed(self) -> Any:
        return self.history.meta.get("seed")

    def __str__(self) -> str:
        return format_report(self)


def nearby(history: History, ops: list[Op]) -> list[dict]:
    """The faults and events within WINDOW_SECONDS of the ops, in time order."""
    if not ops:
        return []
    start = min(op.invoke for op in ops) - WINDOW_SECONDS
    end = max(op.end for op in ops) + WINDOW_SECONDS
    near = [r for r in history.faults + history.events if start <= float(r["t"]) <= end]
    return sorted(near, key=lambda r: float(r["t"]))


def check(run_dir: str) -> Report:
    """Checks RUN_DIR (module docstring); raises InputError when it cannot be read."""
    history = load_history(os.path.join(run_dir, "history.jsonl"))
    final = load_final(os.path.join(run_dir, "final.json"))
    replayed = load_optional(os.path.join(run_dir, "replayed.json"))
    ctx = Context(history, final, replayed,
                  load_optional(os.path.join(run_dir, "replayed_state.json")),
                  load_optional(os.path.join(run_dir, "queries.json")))
    from chaos_check_state import STATE_CHECKS  # it imports this module's helpers
    anomalies = settle_outcomes(ctx)
    for run in CHECKS + STATE_CHECKS:
        anomalies += run(ctx)
    for anomaly in anomalies:
        anomaly.nearby = nearby(history, anomaly.ops)
    unknown = [op for op in history.ops if op.outcome == "unknown"]
    journaled = sum(1 for op in unknown if ctx.journaled(op) > 0)
    return Report(history, anomalies, journaled, len(unknown) - journaled,
                  getattr(ctx, "stale_tags", set()))


def counts(values: Iterable[str], order: Iterable[str] = ()) -> str:
    counter = collections.Counter(values)
    names = [n for n in order if n in counter] + sorted(n for n in counter if n not in order)
    return ", ".join(f"{name} {counter[name]}" for name in names) or "none"


def at(history: History, t: Any) -> str:
    return "?" if t is None else f"+{float(t) - history.started:.3f}s"


def probe_counts(report: Report, probes: list[Op]) -> str:
    """The probe's queries to a paused old leader by what its resume answered: a fresh reply, a
    stale one (a stale-read anomaly), a refusal, none."""
    ok = [op for op in probes if op.outcome == "ok"]
    stale = sum(1 for op in ok if op.tag in report.stale_tags)
    sent = [op for op in probes if op.outcome != "failed"]
    line = (f"probe queries: {len(sent)} sent, {len(ok) - stale} ok-fresh, {stale} ok-stale, "
            f"{sum(1 for op in probes if op.outcome == 'refused')} refused, "
            f"{sum(1 for op in probes if op.outcome == 'unknown')} no reply "
            f"(of {len({op.probe for op in probes})} probes)")
    unsent = len(probes) - len(sent)
    return line + (f", {unsent} not sent" if unsent else "")


def format_op(history: History, op: Op) -> str:
    outcome = op.outcome if op.outcome == op.recorded else f"{op.outcome} (recorded {op.recorded})"
    probe = "" if op.probe is None else f", probe {op.probe} of a paused old leader"
    return (f"{op.tag}: client {op.client}, {op.kind}, account {op.account}, {outcome}, "
            f"invoke {at(history, op.invoke)}, complete {at(history, op.complete)}, "
            f"server {op.server}{probe}")


def format_nearby(history: History, record: dict) -> str:
    if record.get("type") == "event":
        return f"{at(history, record['t'])} event {record.get('what')}: {record.get('detail', '')}"
    return (f"{at(history, record['t'])} fault {record.get('kind')} {record.get('action')} "
            f"target {record.get('target')}: {record.get('detail', '')}")


def format_anomaly(history: History, number: int, anomaly: Anomaly) -> list[str]:
    lines = [f"ANOMALY {number} {anomaly.kind}: {anomaly.message}"]
    for op in anomaly.ops:
        lines.append(f"    {format_op(history, op)}")
        lines.append(f"       payload {compact(op.payload, 200)}")
        lines.append(f"       reply {compact(op.reply, 200)}")
    if anomaly.ops:
        lines += [f"    near: {format_nearby(history, r)}" for r in anomaly.nearby] or \
                 ["    near: no fault or event within 5 s"]
    return lines


def format_report(report: Report) -> str:
    h = report.history
    ops = h.ops
    lines = [
        f"seed: {report.seed}",
        f"ops: {len(ops)} ({counts((op.kind for op in ops), OP_KINDS)})",
        f"orders by type: {counts(order_type(o) for op in ops for o in payload_children(op, 'order'))}",
        f"outcomes: {counts((op.outcome for op in ops), OUTCOMES)}; unknown in the journal "
        f"{report.unknown_journaled}, not {report.unknown_not_journaled}",
        f"faults injected: {counts(f.get('kind') for f in h.faults if f.get('action') == 'inject')}"
        f" (heals {sum(1 for f in h.faults if f.get('action') == 'heal')})",
    ]
    probes = [op for op in ops if op.probe is not None]
    if probes:
        lines.append(probe_counts(report, probes))
    lines.append(f"events: {len(h.events)}")
    lines += [f"    {at(h, e['t'])} {e.get('what')}: {e.get('detail', '')}" for e in h.events]
    for number, anomaly in enumerate(report.anomalies, 1):
        lines += format_anomaly(h, number, anomaly)
    lines.append(f"anomalies: {len(report.anomalies)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    summary, _, details = __doc__.partition("\n\n")
    parser = argparse.ArgumentParser(
        description=summary, epilog=details, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", metavar="RUN_DIR",
                        help="holds history.jsonl, final.json and optionally replayed.json, "
                             "replayed_state.json and queries.json")
    args = parser.parse_args(argv)
    try:
        report = check(args.run_dir)
    except InputError as e:
        print(f"chaos_check: cannot read the run: {e}", file=sys.stderr)
        return 2
    print(format_report(report))
    return 1 if report.anomalies else 0


if __name__ == "__main__":
    sys.exit(main())
