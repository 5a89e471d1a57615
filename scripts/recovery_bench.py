#!/usr/bin/env python3
"""Recovery time: how long start-up takes to replay a journal the projection has not reached.

    scripts/recovery_bench.py [--orders 1000000] [--db URL] [--server PATH]

Starts exchange-server once on a fresh database (--reset) to create 100 accounts with ample
cash and shares of 10 symbols, stops it (SIGTERM: the projection then covers the whole
journal), and appends --orders journal rows directly with SQL (generate_series): one
<transactions> request with one order each, in pairs that cross (a buy of 10 at 100, then a
sell of 10 at 100 by another account), so every second order trades and closes. The
projection position is left behind them. Then it starts the server twice on that state:
  1. with the projector held back (--projector-delay-ms), then SIGKILL: the replay alone;
  2. normally: the replay while the projector writes its effects, then until the projection
     has caught up (projection_position = last journal seq);
and reports for each the server's own "replayed N journal entries in X s" log line, the time
from launch until it accepts connections (what a client waits), the server's CPU seconds by
then (the machine is shared: CPU time is steadier than wall time), and checks the
conservation rules on the caught-up tables.
Without --db a private PostgreSQL is started in .local/bench-pg (scripts/local-pg.sh).
"""
import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
import time

from harness import ROOT, Server, free_port, local_pg, process_cpu_s

PORT = free_port()  # other jobs on a shared machine may hold any fixed port
PG_DIR = os.path.join(ROOT, ".local", "bench-pg")
PG_PORT = 25888
ACCOUNTS = 100
SYMBOLS = 10


def psql(db, sql):
    out = subprocess.run(["psql", db, "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-c", sql],
                         check=True, capture_output=True, text=True).stdout
    return out.strip()


def start(server, *flags):
    """Starts the harness Server (reactor) with `flags` and waits, however long the replay
    takes, until it listens."""
    server.start("--concurrency", "reactor", *flags)
    if not server.wait_listening(math.inf, pause=0.02):
        raise SystemExit("recovery_bench: the server exited; see its log")


def replay_line(log_name):
    m = re.findall(r"loaded the projection .*? in ([0-9.e-]+) s; replayed (\d+) journal entries in "
                   r"([0-9.e-]+) s", open(log_name).read())
    load_s, replayed, replay_s = m[-1]
    return float(load_s), int(replayed), float(replay_s)


def held_back_run(server):
    launched = time.time()
    start(server, "--projector-delay-ms", "86400000")
    serving = time.time() - launched
    cpu = process_cpu_s(server.pid)
    server.kill()
    load_s, replayed, replay_s = replay_line(server.log_path)
    print(f"recovery_bench: projector held back: replayed {replayed:,} journal entries in {replay_s:.1f} s "
          f"({replayed / max(replay_s, 1e-9):,.0f}/s); serving {serving:.1f} s after launch; "
          f"server CPU {cpu:.1f} s ({cpu * 1e6 / max(replayed, 1):.1f} us per entry)", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--orders", type=int, default=1000000, help="journaled orders to replay (even)")
    ap.add_argument("--db", help="database URL (default: private PostgreSQL in .local/bench-pg)")
    ap.add_argument("--server", default=os.path.join(ROOT, "build", "bin", "exchange-server"))
    args = ap.parse_args()
    n = args.orders - args.orders % 2
    db = args.db or local_pg("start", PG_DIR, PG_PORT)
    fd, log = tempfile.mkstemp(prefix="recovery_bench_", suffix=".log")  # kept, as the server's log
    os.close(fd)
    server = Server(args.server, db, PORT, log=log)  # every start's lines, one after the other

    # The accounts and symbols, through the protocol.
    start(server, "--reset")
    xml = "<create>" + "".join(f'<account id="{a}" balance="1000000000"/>' for a in range(1, ACCOUNTS + 1))
    for s in range(SYMBOLS):
        xml += f'<symbol sym="S{s}">' + "".join(
            f'<account id="{a}">1000000000</account>' for a in range(1, ACCOUNTS + 1)) + "</symbol>"
    xml += "</create>"
    with tempfile.NamedTemporaryFile("w", suffix=".xml") as f:
        f.write(xml)
        f.flush()
        subprocess.run([os.path.join(ROOT, "build", "bin", "exchange-client"), "send", "--port", str(PORT),
                        f.name], check=True, stdout=subprocess.DEVNULL)
    server.stop()
    base = int(psql(db, "SELECT max(seq) FROM journal"))
    assert int(psql(db, "SELECT seq FROM projection_position")) == base

    # The journal behind the projection: order g (1-based) is request seq base + g and gets
    # order id g. Pair k = (g + 1) / 2: account 1 + k % 100 buys, the next account sells.
    t0 = time.time()
    psql(db, f"""
        INSERT INTO journal (seq, at, first_order_id, request)
        SELECT {base} + g, 1700000000 + g / 1000, g,
               format('<transactions id="%s"><order sym="S%s" amount="%s" limit="100"/></transactions>',
                      CASE WHEN g % 2 = 1 THEN 1 + ((g + 1) / 2) % {ACCOUNTS}
                           ELSE 1 + ((g + 1) / 2 + 1) % {ACCOUNTS} END,
                      ((g + 1) / 2) % {SYMBOLS},
                      CASE WHEN g % 2 = 1 THEN '10' ELSE '-10' END)
        FROM generate_series(1, {n}) AS g""")
    print(f"recovery_bench: {n:,} journal rows written in {time.time() - t0:.1f} s "
          f"(projection at seq {base}, journal to seq {base + n})", flush=True)
    psql(db, "CHECKPOINT")

    if n > 1900000:
        # The replay waits for the projector beyond 2 million unprojected requests (bounded
        # memory), so with the projector held back it would wait for ever.
        print("recovery_bench: (no held-back run above 1.9 million orders: the replay waits for "
              "the projector beyond 2 million)", flush=True)
    else:
        held_back_run(server)

    launched = time.time()
    start(server)
    serving = time.time() - launched
    cpu = process_cpu_s(server.pid)
    last = base + n
    while int(psql(db, "SELECT seq FROM projection_position")) < last:
        time.sleep(0.2)
    caught_up = time.time() - launched
    rss = int(open(f"/proc/{server.pid}/status").read().split("VmHWM:")[1].split()[0]) // 1024
    server.close()

    load_s, replayed, replay_s = replay_line(log)
    cash = psql(db, "SELECT (SELECT sum(deposited) FROM accounts) = (SELECT sum(balance) FROM accounts) + "
                    "(SELECT coalesce(sum(open_amount * limit_price), 0) FROM orders WHERE amount > 0 "
                    "AND canceled_at IS NULL)")
    orders = psql(db, "SELECT count(*) FROM orders")
    print(f"recovery_bench: projecting meanwhile: replayed {replayed:,} journal entries in {replay_s:.1f} s "
          f"({replayed / max(replay_s, 1e-9):,.0f}/s; projection loaded in {load_s:.2f} s); "
          f"serving {serving:.1f} s after launch (server CPU {cpu:.1f} s); projection caught up "
          f"{caught_up:.1f} s after launch; peak RSS {rss} MiB; {orders} orders in the tables; "
          f"cash conserved: {cash == 't'}", flush=True)
    return 0 if cash == "t" and replayed == n else 1


if __name__ == "__main__":
    sys.exit(main())
