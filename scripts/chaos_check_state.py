"""The chaos checker's checks of state and reads (scripts/chaos_check.py runs them with its own):

  state-differs   the tables after the run differ from the state the engine's own rules reach
                  replaying the whole journal (replayed_state.json, exchange-replay
                  --final-state): an account, position, order or execution missing on one side
                  or with another value (orders' stop_price and priority too)
  query-differs   an order's <status> queried through the protocol after the run
                  (queries.json) differs from its row: open, waiting (a row with a stop price
                  and something open: <waiting shares stop>) or canceled shares, cancel time,
                  executions; or the exchange does not know an order the tables hold
  stale-read      an ok <query> reply that misses what was acknowledged before the query was
                  sent: the order itself, its cancel, an execution an earlier reply showed, or
                  an execution of the tables whose newer order's <opened> was acknowledged (a
                  read answered from a state older than an acknowledged write, e.g. by a server
                  that another one has taken over from: the nemesis's probe queries such a
                  server, paused past its lease, as it resumes). Such an execution counts only
                  when both its orders' <opened> are known and neither is a stop or replaced:
                  those may enter the book in a later request (reentered_orders)

replayed_state.json: {"accounts", "positions", "orders", "executions"}, rows as final.json's
(orders without execution_ids). queries.json: {"replies": ["<results><status id=...>...", ...]},
the replies to <query> requests for every order in the tables, sent by its account.
"""
from __future__ import annotations

import collections
import xml.etree.ElementTree as ET

# chaos_check imports this module inside check(): no import cycle at load time.
from chaos_check import (Anomaly, Context, Op, as_int, dec, describe, elements, fills_of,
                         parse_xml, payload_children, reply_children, same_optional)

# The engine's refusal of a query or cancel of an order the account does not have
# (server/protocol/reject_text.cpp, Reason::NoSuchOrder).
NO_SUCH_ORDER = "No such order"
MAX_PER_KIND = 20  # anomalies of one kind listed one by one; the rest are counted

# Each table's key and the fields compared: (name, is_number). orders.priority too: a server
# that restarted or took over counts priorities on from projection_position.next_priority, as
# the live run and a replay from scratch do.
STATE_TABLES = {
    "accounts": (("id",), (("balance", True), ("deposited", True))),
    "positions": (("account_id", "symbol"), (("amount", True), ("granted", True))),
    "orders": (("id",), (("account_id", False), ("symbol", False), ("amount", True),
                         ("limit_price", True), ("open_amount", True), ("created_at", True),
                         ("canceled_at", True), ("stop_price", True), ("priority", True))),
    "executions": (("id",), (("buy_order", True), ("sell_order", True), ("shares", True),
                             ("price", True), ("executed_at", True))),
}


def capped(kind: str, anomalies: list[Anomaly]) -> list[Anomaly]:
    if len(anomalies) <= MAX_PER_KIND:
        return anomalies
    rest = len(anomalies) - MAX_PER_KIND
    return anomalies[:MAX_PER_KIND] + [Anomaly(kind, f"... and {rest} more of this kind")]


def same_value(a, b, number: bool) -> bool:
    """Equal, or both null (a market order's limit, a stop that is not waiting)."""
    if a is None or b is None:
        return a is None and b is None
    return same_optional(a, b) if number else str(a) == str(b)


def row_key(row: dict, key: tuple) -> tuple:
    return tuple(str(as_int(row.get(k)) if k == "id" else row.get(k)) for k in key)


def table_differences(table: str, stored: list[dict], replayed: list[dict]) -> list[Anomaly]:
    key, fields = STATE_TABLES[table]
    have = {row_key(r, key): r for r in stored}
    want = {row_key(r, key): r for r in replayed}
    found = []
    for k in sorted(set(have) | set(want)):
        name = f"{table} {'/'.join(k)}"
        if k not in have or k not in want:
            where = "the tables" if k not in have else "the replay"
            found.append(Anomaly("state-differs", f"{name} is missing from {where}"))
            continue
        for field, number in fields:
            if not same_value(have[k].get(field), want[k].get(field), number):
                found.append(Anomaly("state-differs",
                                     f"{name}: {field} is {have[k].get(field)!r} in the tables, "
                                     f"{want[k].get(field)!r} in the replay"))
    return found


def check_replayed_state(ctx: Context) -> list[Anomaly]:
    """The tables hold what replaying the journal by the engine's rules ends in."""
    replayed = getattr(ctx, "replayed_state", None)
    if replayed is None:
        return []
    found = []
    for table in STATE_TABLES:
        found += table_differences(table, ctx.final[table], replayed.get(table) or [])
    return capped("state-differs", found)


# ---- the final state through the protocol -----------------------------------------------------

def queried_statuses(replies: list[str]) -> tuple[dict, set]:
    """The <status> of each order in the replies, and the ids answered with an <error>."""
    statuses, errors = {}, set()
    for reply in replies:
        try:
            root = parse_xml(reply)
        except ET.ParseError:
            continue
        for child in elements(root):
            if child.tag == "status":
                statuses[as_int(child.get("id"))] = child
            elif child.tag == "error" and child.get("id") is not None:
                errors.add(as_int(child.get("id")))
    return statuses, errors


def expected_children(ctx: Context, order: dict) -> tuple:
    """What a <status> of this row must show: (open shares or None, (canceled shares, time) or
    None, its executions counted, (waiting shares, stop) or None). A row with a stop price
    and something open waits for its trigger (PROTOCOL 4.7): <waiting>, never <open>."""
    open_amount = dec(order.get("open_amount"))
    fills = fills_of(ctx, as_int(order.get("id")))
    if order.get("canceled_at") is not None:
        return None, (open_amount, as_int(order["canceled_at"])), fills, None
    if open_amount and order.get("stop_price") is not None:
        return None, None, fills, (open_amount, dec(order["stop_price"]))
    return (open_amount if open_amount else None), None, fills, None


def shown_children(status: ET.Element) -> tuple:
    """(open shares or None, (canceled shares, time) or None, executions counted, (waiting
    shares, stop) or None), as expected_children."""
    open_shares, canceled, fills, waiting = None, None, collections.Counter(), None
    for child in elements(status):
        if child.tag == "open":
            open_shares = dec(child.get("shares"))
        elif child.tag == "waiting":
            waiting = (dec(child.get("shares")), dec(child.get("stop")))
        elif child.tag == "canceled":
            canceled = (dec(child.get("shares")), as_int(child.get("time")))
        elif child.tag == "executed":
            fills[(dec(child.get("shares")), dec(child.get("price")),
                   as_int(child.get("time")))] += 1
    return open_shares, canceled, fills, waiting


def check_final_queries(ctx: Context) -> list[Anomaly]:
    """Every order in the tables, queried through the protocol, shows what its row holds."""
    queries = getattr(ctx, "queries", None)
    if queries is None:
        return []
    statuses, errors = queried_statuses(queries.get("replies") or [])
    found = []
    for order_id, order in sorted(ctx.orders.items(), key=lambda kv: kv[0] or 0):
        status = statuses.get(order_id)
        if status is None:
            why = "answered with an <error>" if order_id in errors else "not answered"
            found.append(Anomaly("query-differs", f"order {order_id} is in the tables but its "
                                                  f"query was {why}"))
        elif shown_children(status) != expected_children(ctx, order):
            found.append(Anomaly("query-differs", f"order {order_id}: the protocol shows "
                                                  f"{shown_children(status)}, its row "
                                                  f"{expected_children(ctx, order)}"))
    return capped("query-differs", found)


# ---- reads against what was acknowledged before them ------------------------------------------

class Known:
    """What was acknowledged of one order, each fact with the time its reply completed: its
    <opened>, its cancel, the executions replies showed, and the executions in the tables whose
    aggressor's <opened> was acknowledged (an execution of two orders placed once each happens
    while the newer one is placed, so it is acknowledged with that order, whoever's it is)."""

    def __init__(self):
        self.opened: float | None = None
        self.canceled: float | None = None
        self.fills: list[tuple[float, collections.Counter]] = []
        self.executions: list[tuple[float, tuple]] = []

    def fills_before(self, t: float) -> collections.Counter:
        most: collections.Counter = collections.Counter()
        for at, fills in self.fills:
            if at < t:
                most |= fills   # the largest count of each fill any earlier reply showed
        stored = collections.Counter(key for at, key in self.executions if at < t)
        return most | stored


def earliest(a: float | None, b: float) -> float:
    return b if a is None else min(a, b)


def known_facts(ctx: Context) -> dict[int | None, Known]:
    known: dict[int | None, Known] = collections.defaultdict(Known)
    for op in ctx.ok_ops():
        for node in reply_children(op, "opened"):
            k = known[as_int(node.get("id"))]
            k.opened = earliest(k.opened, op.end)
        for node in reply_children(op, "canceled"):
            k = known[as_int(node.get("id"))]
            k.canceled = earliest(k.canceled, op.end)
        for node in reply_children(op, "status") + reply_children(op, "canceled"):
            known[as_int(node.get("id"))].fills.append((op.end, shown_children(node)[2]))
    reentered = reentered_orders(ctx)
    for e in ctx.executions.values():
        buy, sell = as_int(e.get("buy_order")), as_int(e.get("sell_order"))
        placed = known[max(buy or 0, sell or 0)].opened
        if placed is not None and known[min(buy or 0, sell or 0)].opened is not None \
                and not {buy, sell} & reentered:
            key = (dec(e.get("shares")), dec(e.get("price")), as_int(e.get("executed_at")))
            for order in (buy, sell):
                known[order].executions.append((placed, key))
    return known


def reentered_orders(ctx: Context) -> set[int | None]:
    """Orders that may have entered the book after they were placed, so that an execution of
    theirs may come from a later request than either order's <opened>: stop orders (their
    trigger, in whichever request made it) and orders any <replace> names (one that loses
    priority enters again). A stop that an unknown op placed has no known id: an execution
    counts only if both its orders' <opened> were acknowledged."""
    ids = set()
    for op in ctx.history.ops:
        ids |= {as_int(c.get("id")) for c in payload_children(op, "replace")}
        ids |= {as_int(n.get("id")) for n in reply_children(op, "opened")
                if n.get("stop") is not None}
    return ids


def stale_anomalies(op: Op, node: ET.Element, known: Known) -> list[Anomaly]:
    order = node.get("id")
    if node.tag == "error":
        # Only "No such order" denies the order; another error (its archived row could not be
        # read, a reply budget) says nothing of what exists.
        denied = (node.text or "").strip().startswith(NO_SUCH_ORDER)
        if denied and known.opened is not None and known.opened < op.invoke:
            return [Anomaly("stale-read", f"{op.tag} was told order {order} does not exist, "
                                          f"after its <opened> was acknowledged", [op])]
        return []
    found = []
    shown = shown_children(node)
    if known.canceled is not None and known.canceled < op.invoke and shown[1] is None:
        found.append(Anomaly("stale-read", f"{op.tag}'s {describe(node)} shows order {order} "
                                           f"not canceled after its cancel was acknowledged",
                             [op]))
    missing = known.fills_before(op.invoke) - shown[2]
    if missing:
        found.append(Anomaly("stale-read", f"{op.tag}'s {describe(node)} lacks executions "
                                           f"acknowledged before it was sent: {dict(missing)}",
                             [op]))
    return found


def check_stale_reads(ctx: Context) -> list[Anomaly]:
    """Each ok query reply shows at least what replies completed before it was sent showed."""
    known = known_facts(ctx)
    found = []
    for op in ctx.ok_ops():
        if op.kind != "query":
            continue
        for node in reply_children(op, "status") + reply_children(op, "error"):
            found += stale_anomalies(op, node, known[as_int(node.get("id"))])
    ctx.stale_tags = {op.tag for anomaly in found for op in anomaly.ops}   # the report's count
    return capped("stale-read", found)


STATE_CHECKS = [check_replayed_state, check_final_queries, check_stale_reads]
