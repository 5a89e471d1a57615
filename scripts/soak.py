#!/usr/bin/env python3
"""Soak test: a long random trading day, then proof that nothing was lost or invented.

    scripts/soak.py [--minutes 10] [--clients 64] [--model pool] [--db URL]
    scripts/soak.py --check-only          only the checks, on the database a previous run left

Starts exchange-server (build/bin) on a fresh database, runs `exchange-client bench` with 64
clients of random orders, queries and cancels on a few hot symbols, plus a trickle of creates,
for the given time, then checks:
  1. the conservation rules of PROTOCOL.md section 6 in SQL (cash and shares, no negatives);
  2. the server and the database agree, through the protocol: for every account, a buy of
     exactly its stored balance is accepted and one of a millionth more is not; for every
     position, a sell of exactly the stored amount is accepted and a millionth more is not
     (each probe is cancelled again).
Prints the violations and exits 1 if there is any. Without --db it starts a private
PostgreSQL (scripts/local-pg.sh) in .local/soak-pg.
"""
import argparse
from decimal import Decimal
import os
import subprocess
import sys
import time

from harness import ROOT, Server, bench_command, local_pg
from wire import request

SERVER = os.path.join(ROOT, "build", "bin", "exchange-server")
CLIENT = os.path.join(ROOT, "build", "bin", "exchange-client")
PG_DIR = os.path.join(ROOT, ".local", "soak-pg")
PG_PORT = 25777
PROBE_SYMBOL = "PROBE"  # never traded by the load: probes on it cannot match anything


def sql(db, query):
    out = subprocess.run(["psql", db, "-At", "-F", "\t", "-c", query], check=True,
                         capture_output=True, text=True).stdout
    return [line.split("\t") for line in out.splitlines() if line]


def wait_for_projection(db, seconds=60):
    """The SQL tables are a projection of the journal, written a moment after each commit:
    wait until they hold everything journaled so far."""
    target = int(sql(db, "SELECT coalesce(max(seq), 0) FROM journal")[0][0])
    deadline = time.time() + seconds
    while int(sql(db, "SELECT seq FROM projection_position")[0][0]) < target:
        if time.time() > deadline:
            raise SystemExit("soak: the projection did not catch up with the journal")
        time.sleep(0.05)


def opened_id(reply):
    marker = '<opened '
    if marker not in reply:
        return None
    return reply.split(' id="')[-1].split('"')[0]


def fmt(d):
    """A Decimal as plain text, never in exponent form."""
    return format(d.normalize(), "f")


def probe(port, account, symbol, amount, limit):
    """Places an order; returns (True, "") if accepted (and cancels it), else (False, reason)."""
    reply = request(port, f'<transactions id="{account}"><order sym="{symbol}" '
                          f'amount="{amount}" limit="{limit}"/></transactions>')
    oid = opened_id(reply)
    if oid:
        request(port, f'<transactions id="{account}"><cancel id="{oid}"/></transactions>')
        return True, ""
    return False, reply.strip().replace("\n", " ")[:200]


def create_probe_positions(port, accounts, chunk=500):
    """One share of PROBE_SYMBOL for every account, in requests below the server's
    --max-children; any refusal stops the check (probes without it would all fail)."""
    for i in range(0, len(accounts), chunk):
        part = accounts[i:i + chunk]
        xml = ("<create>" + "".join(f'<symbol sym="{PROBE_SYMBOL}"><account id="{a}">1</account></symbol>'
                                    for a, _ in part) + "</create>")
        reply = request(port, xml)
        if reply.count("<created") != len(part):
            raise RuntimeError(f"soak: creating probe positions failed: {reply[:300]}")


def check_conservation(db):
    bad = []
    cash = sql(db, "SELECT d, h, d = h FROM (SELECT (SELECT coalesce(sum(deposited),0) FROM accounts) d,"
                   " (SELECT coalesce(sum(balance),0) FROM accounts) + (SELECT coalesce(sum(open_amount*limit_price),0)"
                   " FROM orders WHERE amount > 0 AND canceled_at IS NULL) h) t")[0]
    if cash[2] != "t":
        bad.append(f"cash: deposited {cash[0]} but held+reserved {cash[1]}")
    for sym, granted, held in sql(db, """
        SELECT s.sym, coalesce(g.granted,0), coalesce(g.held,0) + coalesce(o.res,0) FROM symbols s
        LEFT JOIN (SELECT symbol, sum(granted) granted, sum(amount) held FROM positions GROUP BY symbol) g
          ON g.symbol = s.sym
        LEFT JOIN (SELECT symbol, sum(open_amount) res FROM orders WHERE amount < 0 AND canceled_at IS NULL
                   GROUP BY symbol) o ON o.symbol = s.sym
        WHERE coalesce(g.granted,0) <> coalesce(g.held,0) + coalesce(o.res,0)"""):
        bad.append(f"shares of {sym}: created {granted} but held+reserved {held}")
    for (what,) in sql(db, "SELECT 'account ' || id FROM accounts WHERE balance < 0 UNION ALL "
                           "SELECT 'position ' || account_id || '/' || symbol FROM positions WHERE amount < 0"):
        bad.append(f"negative: {what}")
    return bad


def check_through_protocol(db, port):
    bad = []
    accounts = sql(db, "SELECT id, balance FROM accounts ORDER BY id")
    # Every account gets a probe position so it can also be checked for sells below.
    create_probe_positions(port, accounts)
    tick = Decimal("0.000001")  # the smallest amount a client can write
    for account, balance in accounts:
        b = Decimal(balance)
        if b == 0 or b != b.quantize(tick):  # nothing to buy, or not expressible in 6 digits
            continue
        ok, why = probe(port, account, PROBE_SYMBOL, fmt(b), "1")
        if not ok:
            bad.append(f"account {account}: a buy of exactly its balance {balance} was refused: {why}")
        if probe(port, account, PROBE_SYMBOL, fmt(b + tick), "1")[0]:
            bad.append(f"account {account}: a buy of {fmt(b + tick)} above its balance was accepted")
    positions = sql(db, f"SELECT account_id, symbol, amount FROM positions WHERE symbol <> '{PROBE_SYMBOL}' "
                        "AND amount > 0 ORDER BY 1, 2")
    for account, symbol, amount in positions:
        a = Decimal(amount)
        ok, why = probe(port, account, symbol, fmt(-a), "999999999999")
        if not ok:
            bad.append(f"position {account}/{symbol}: a sell of exactly {amount} was refused: {why}")
        if probe(port, account, symbol, fmt(-(a + tick)), "999999999999")[0]:
            bad.append(f"position {account}/{symbol}: a sell of {fmt(a + tick)} was accepted")
    return bad, len(accounts), len(positions)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=10.0, help="length of the trading day (default 10)")
    ap.add_argument("--clients", type=int, default=64, help="concurrent trading clients (default 64)")
    ap.add_argument("--model", default="pool", help="server concurrency model (default pool)")
    ap.add_argument("--db", help="database URL (default: a private PostgreSQL in .local/soak-pg)")
    ap.add_argument("--port", type=int, default=24777)
    ap.add_argument("--check-only", action="store_true",
                    help="no trading: start the server on the existing database and run the checks")
    args = ap.parse_args()

    db = args.db or local_pg("start", PG_DIR, PG_PORT)
    server = Server(SERVER, db, args.port, log=None)  # its log lines among this script's
    server.start("--concurrency", args.model, *([] if args.check_only else ["--reset"]))
    try:
        if not server.wait_listening(pause=0.1):
            if not server.alive():
                raise SystemExit(f"soak: exchange-server exited with status {server.proc.returncode}")
            raise SystemExit("soak: exchange-server did not start listening")
        if not args.check_only:
            trade(args)
        wait_for_projection(db)
        bad = check_conservation(db)
        protocol_bad, n_accounts, n_positions = check_through_protocol(db, args.port)
        bad += protocol_bad
        print(f"soak: probed {n_accounts} accounts and {n_positions} positions through the protocol")
    finally:
        server.stop()
    for line in bad:
        print("VIOLATION:", line)
    print(f"soak: {len(bad)} violations")
    return 1 if bad else 0


def trade(args):
    """The trading day: random orders, queries and cancels, plus a trickle of creates."""
    seconds = str(max(1, int(args.minutes * 60)))

    def bench(*flags, progress=False):
        """A bench of its own workload for the trading day, its report on a pipe."""
        return subprocess.Popen(bench_command(CLIENT, args.port, "--duration", seconds, *flags, workload=(),
                                              progress=progress), stdout=subprocess.PIPE, text=True)

    print(f"soak: {args.clients} clients trading for {seconds} s on 3 hot symbols (model {args.model})",
          flush=True)
    # The trading bench's progress line (stderr) shows the run is alive; one is enough.
    trading = bench("--workload", "mixed", "--clients", str(args.clients), "--symbols", "3", "--accounts", "40",
                    "--orders-per-request", "3", "--price-decimals", "2", "--balance", "50000000",
                    "--shares", "200000", progress=True)
    creating = bench("--workload", "create", "--clients", "2", "--think-ms", "50")
    out_trading, _ = trading.communicate()
    creating.communicate()
    for line in out_trading.splitlines():
        if line.strip().startswith(("requests", "throughput", "latency")):
            print("soak:", line.strip())


if __name__ == "__main__":
    sys.exit(main())
