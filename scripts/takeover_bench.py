#!/usr/bin/env python3
"""Takeover time of a hot standby (exchange-server --standby) beside a plain restart, with a
resting book of --orders orders that never cross.

    scripts/takeover_bench.py [--orders 1000000] [--takeovers 20] [--restarts 5]
                              [--pauses 3] [--lease-ms 5000] [--clients 4] [--load-seconds 2]
                              [--cost-rounds 5] [--cost-sets 3] [--cost-seconds 8]
                              [--cost-clients 64] [--cost-only] [--standby-poll-ms MS[,MS...]] [--json FILE]
                              [--db URL] [--build-dir build] [--server-bin B] [--client-bin B]

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
5. The standby's cost (--cost-rounds, 0 to skip; --cost-only runs this alone): rounds of
   `exchange-client bench --persistent --clients --cost-clients --duration --cost-seconds` (1 s
   warm-up), alternating alone and with a standby following (started before the round,
   stopped after it), each against an active server started on an emptied database (--reset)
   with the bench's accounts and symbols, so no round inherits the last one's book. Prints every round (throughput, the
   active server's CPU per request, the standby's CPU per journal entry it replayed and its
   lag at the end), the medians of both kinds, their ratio, and the median of each with-round
   over the mean of the alone-rounds on either side of it (robust to the machine's drift).
   The rounds run in --cost-sets sets of --cost-rounds + --cost-rounds, spread over the run:
   with 2 or more, the first set before the book is built and the others after the pauses
   (--cost-only: back to back). Each set's figures are kept, and pooled: every set's pairs
   together (a with-round is paired only with alone-rounds of its own set).

--json FILE writes every figure (each round, the summaries, date, machine, load, commit) for
the study's report (writeup/results/takeover.json: writeup/study/report.py reads it).

Without --db a private PostgreSQL is started in .local/takeover-bench-pg on port 25889
(--pg-port; scripts/local-pg.sh) and stopped at the end if this run started it (one already
running there is used and left running). Every server it starts is stopped at the end, also on
Ctrl-C. The servers' ports: free ones, picked at start.
"""
import argparse
import datetime
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from harness import (ROOT, Server, bench, cpu_model, free_port, git_commit, metrics, process_cpu_s,
                     start_local_pg, stop_local_pg)
from wire import request

PG_DIR = os.path.join(ROOT, ".local", "takeover-bench-pg")
PG_PORT = 25889
ACCOUNTS = 1000
SYMBOLS = 10


def log(msg):
    print(f"takeover_bench: {msg}", file=sys.stderr, flush=True)


def psql(db, query):
    # One -c string is one transaction.
    done = subprocess.run(["psql", db, "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-c", query],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"takeover_bench: psql failed: {done.stderr.strip()}")
    return done.stdout.strip()


def wait_accepting(server, seconds=120):
    """Until `server` accepts connections on its trading port; exits the script if it ends or
    does not within `seconds`."""
    if not server.wait_listening(seconds, pause=0.01):
        if not server.alive():
            raise SystemExit(f"takeover_bench: the server on port {server.port} exited; see "
                             f"{server.log_path}")
        raise SystemExit("takeover_bench: the server did not start")


def wait_following(server, seconds=120):
    """Until the standby `server` says on /healthz that it follows the journal (503, "standby:
    following"); exits the script if it ends or does not within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not server.alive():
            raise SystemExit(f"takeover_bench: the standby on port {server.port} exited; see "
                             f"{server.log_path}")
        status, body = server.healthz()
        if status == 503 and "standby: following" in body:
            return
        time.sleep(0.02)
    raise SystemExit("takeover_bench: the standby did not start following")


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
    wait_accepting(server)
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


def standby_backends_cpu_s(db):
    """CPU seconds so far of the PostgreSQL backends serving a standby's reads
    (application_name exchange-standby), or None where /proc cannot show them (PostgreSQL on
    another machine or user)."""
    pids = psql(db, "SELECT pid FROM pg_stat_activity WHERE application_name = 'exchange-standby'").split()
    try:
        return {pid: process_cpu_s(pid) for pid in pids}
    except OSError:
        return None


def standby_cost(args, binary, client, db, servers, set_number=1):
    """One set of alternating rounds of persistent load against one active server, alone and
    with a standby following it: the standby's cost to the active server, measured in the same
    run; its rounds (each marked with `set_number`). With several --standby-poll-ms values the
    with-rounds take them in turn, each after an alone-round."""
    active, standby = servers
    polls = args.standby_poll_ms or [None]
    schedule = [p for _ in range(args.cost_rounds) for q in polls for p in ("alone", q)]
    rounds = []
    try:
        for r, poll in enumerate(schedule):
            with_standby = poll != "alone"
            # Every round from an emptied database (TRUNCATE: nothing left for autovacuum):
            # the book and the tables a round leaves would slow the next one down, and the
            # alternation would turn that drift into a cost.
            active.start("--reset", "--lease-ms", str(args.lease_ms))
            wait_accepting(active)
            bench(client, active.port, "--setup-only")
            if with_standby:
                standby.start("--standby", "--lease-ms", str(args.lease_ms),
                              *(["--standby-poll-ms", str(poll)] if poll else []), nice=args.standby_nice)
                wait_following(standby)
                sb0 = metrics(standby.admin)["exchange_journal_seq"]
                sb_cpu0 = process_cpu_s(standby.proc.pid)
                pg0 = standby_backends_cpu_s(db)
            cpu0, t0 = process_cpu_s(active.proc.pid), time.monotonic()
            rep = bench(client, active.port, "--persistent",
                        "--clients", str(args.cost_clients), "--duration", str(args.cost_seconds),
                        "--warmup", "1", "--no-setup")
            wall = time.monotonic() - t0
            active_cpu = process_cpu_s(active.proc.pid) - cpu0
            served = rep["ok"] + rep["rejected"] + rep.get("warmup_requests", 0)
            row = {"set": set_number, "round": r + 1, "standby": with_standby,
                   "poll_ms": poll if with_standby else None,
                   "throughput": rep["throughput_items_ps"],
                   "p99_ms": rep["latency_ms"]["p99"], "errors": rep["error_replies"] + rep["connection_errors"],
                   "active_cpu_us_per_request": active_cpu / max(served, 1) * 1e6,
                   "active_cpu_share": active_cpu / wall, "load1": os.getloadavg()[0]}
            extra = ""
            if with_standby:
                time.sleep(0.05)  # its next poll: the lag at the end, not mid-read
                m = metrics(standby.admin)
                sb_cpu = process_cpu_s(standby.proc.pid) - sb_cpu0
                replayed = m["exchange_journal_seq"] - sb0
                pg1 = standby_backends_cpu_s(db)
                # The same sessions at both ends (a reconnect in between is not counted).
                pg_cpu = (sum(pg1[p] - pg0[p] for p in pg1 if p in pg0)
                          if pg0 is not None and pg1 is not None else None)
                row.update({"standby_cpu_s": sb_cpu, "standby_cpu_share": sb_cpu / wall,
                            "standby_entries": int(replayed),
                            "standby_cpu_us_per_entry": sb_cpu / max(replayed, 1) * 1e6,
                            "standby_pg_cpu_s": pg_cpu,
                            "standby_pg_cpu_us_per_entry": None if pg_cpu is None
                            else pg_cpu / max(replayed, 1) * 1e6,
                            "standby_lag_entries": int(m.get("exchange_standby_lag_entries", 0)),
                            "standby_lag_ms": m.get("exchange_standby_lag_seconds", 0) * 1000})
                pg = ("" if pg_cpu is None else
                      f", its PostgreSQL session {pg_cpu:.2f} CPU s "
                      f"({row['standby_pg_cpu_us_per_entry']:.1f} µs per entry)")
                extra = (f"; standby{f' (poll {poll} ms)' if poll else ''}: {sb_cpu:.2f} CPU s "
                         f"({row['standby_cpu_share'] * 100:.0f}% of a core), {int(replayed):,} entries "
                         f"replayed, {row['standby_cpu_us_per_entry']:.1f} µs each{pg}, "
                         f"{row['standby_lag_entries']} entries behind at the end")
            standby.stop()
            active.stop()
            rounds.append(row)
            log(f"cost set {set_number}, round {r + 1}/{len(schedule)} "
                f"({'with a standby' if with_standby else 'alone'}): "
                f"{row['throughput']:,.0f} requests/s, p99 {row['p99_ms']:.1f} ms, active server "
                f"{row['active_cpu_us_per_request']:.1f} µs CPU/request, load {row['load1']:.1f}{extra}")
    finally:
        standby.stop()
        active.stop()
    return rounds


def figures_by_poll(rounds, polls):
    """cost_figures at the first poll interval, and per interval under by_poll_ms if several."""
    by_poll = {str(p): cost_figures(rounds, p) for p in polls}
    out = dict(by_poll[str(polls[0])])
    if len(polls) > 1:
        out["by_poll_ms"] = by_poll
    return out


def cost_result(args, sets):
    """takeover.json's "cost": every round (each with its set), the pooled figures (every set's
    pairs together) and under "sets" each set's own figures, when it started and where in the
    run it ran. `sets`: [(rounds, started_at, when)]."""
    polls = args.standby_poll_ms or [None]
    rounds = [x for rs, _, _ in sets for x in rs]
    out = {"rounds": rounds, "seconds": args.cost_seconds, "clients": args.cost_clients}
    out.update(figures_by_poll(rounds, polls))
    out["sets"] = [dict(figures_by_poll(rs, polls), set=i + 1, started_at=at, when=when)
                   for i, (rs, at, when) in enumerate(sets)]
    return out


def cost_set(args, binary, client, db, servers, number, when):
    """One set of cost rounds: (rounds, started_at, when)."""
    log(f"the standby's cost, set {number}/{args.cost_sets} ({when}): {args.cost_rounds} + "
        f"{args.cost_rounds} rounds")
    at = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    return standby_cost(args, binary, client, db, servers, number), at, when


def cost_figures(rounds, poll):
    """Medians of the alone-rounds and of the with-rounds at `poll`, and their ratios."""
    alone = [x["throughput"] for x in rounds if not x["standby"]]
    with_rows = [x for x in rounds if x["standby"] and x["poll_ms"] == poll]
    # Each with-round against the mean of the alone-rounds either side of it (the schedule
    # alternates): a drift of the machine's load cancels out to first order.
    # Pooled over several sets, a with-round is paired only within its own set.
    pair_ratios = []
    for i, x in enumerate(rounds):
        if x["standby"] and x["poll_ms"] == poll:
            near = [y["throughput"] for y in rounds[max(i - 1, 0):i + 2]
                    if not y["standby"] and y.get("set") == x.get("set")]
            pair_ratios.append(x["throughput"] / statistics.mean(near))
    pg = [x["standby_pg_cpu_us_per_entry"] for x in with_rows]
    return {
        "poll_ms": poll, "with_rounds": len(with_rows), "alone_rounds": len(alone),
        "alone_median": statistics.median(alone),
        "standby_median": statistics.median(x["throughput"] for x in with_rows),
        "ratio_of_medians": statistics.median(x["throughput"] for x in with_rows) / statistics.median(alone),
        "median_pair_ratio": statistics.median(pair_ratios), "pair_ratios": pair_ratios,
        "standby_cpu_us_per_entry_median": statistics.median(x["standby_cpu_us_per_entry"] for x in with_rows),
        "standby_cpu_share_median": statistics.median(x["standby_cpu_share"] for x in with_rows),
        "standby_pg_cpu_us_per_entry_median": statistics.median(pg) if None not in pg else None,
        "active_cpu_us_alone_median": statistics.median(
            x["active_cpu_us_per_request"] for x in rounds if not x["standby"]),
        "active_cpu_us_with_median": statistics.median(x["active_cpu_us_per_request"] for x in with_rows),
        "max_standby_lag_entries": max(x["standby_lag_entries"] for x in with_rows),
        "max_standby_lag_ms": max(x["standby_lag_ms"] for x in with_rows),
    }


def cost_summary(c):
    lines = []
    for s in c.get("sets", []) if len(c.get("sets", [])) > 1 else []:
        pairs = s["pair_ratios"]
        lines.append(f"the standby's cost, set {s['set']} ({s['when']}): {s['alone_median']:,.0f} "
                     f"requests/s alone, {s['standby_median']:,.0f} with a standby (medians), ratio "
                     f"{s['ratio_of_medians']:.3f}, per pair {s['median_pair_ratio']:.3f} "
                     f"({min(pairs):.3f}-{max(pairs):.3f})")
    sets = f"{len(c['sets'])} sets pooled: " if len(c.get("sets", [])) > 1 else ""
    for f in (c["by_poll_ms"].values() if "by_poll_ms" in c else [c]):
        poll = "" if f["poll_ms"] is None else f", --standby-poll-ms {f['poll_ms']}"
        lines.append(
            f"the standby's cost ({sets}{f['alone_rounds']} alone and {f['with_rounds']} with-rounds of "
            f"{c['seconds']} s, {c['clients']} persistent clients"
            f"{poll}): "
            f"{f['alone_median']:,.0f} requests/s alone, {f['standby_median']:,.0f} with a standby "
            f"following (median); ratio {f['ratio_of_medians']:.3f}, median of each with-round over "
            f"its alone neighbours {f['median_pair_ratio']:.3f}; the standby used "
            f"{f['standby_cpu_us_per_entry_median']:.1f} µs CPU per entry replayed "
            f"({f['standby_cpu_share_median'] * 100:.0f}% of a core)"
            + ("" if f["standby_pg_cpu_us_per_entry_median"] is None else
               f" and its PostgreSQL session {f['standby_pg_cpu_us_per_entry_median']:.1f} µs")
            + f"; the active server {f['active_cpu_us_alone_median']:.1f} µs CPU/request alone, "
            f"{f['active_cpu_us_with_median']:.1f} with it; the standby at most "
            f"{f['max_standby_lag_entries']} entries ({f['max_standby_lag_ms']:.0f} ms) behind at a "
            f"round's end")
    return "\n".join(lines)


def server_default(binary, flag):
    """A flag's default as the server's --help prints it ("--flag arg (=20)"), or None."""
    text = subprocess.run([binary, "--help"], capture_output=True, text=True).stdout
    m = re.search(rf"--{re.escape(flag)} arg \(=([^)]*)\)", text)
    return int(m.group(1)) if m and m.group(1).isdigit() else None


def machine():
    commit = git_commit(ROOT)  # the study's rule: its own outputs do not make a checkout dirty
    short = commit.split("-", 1)[0][:7] + ("-dirty" if commit.endswith("-dirty") else "")
    return {"nproc": os.cpu_count(), "cpu_model": cpu_model(), "kernel": platform.release(),
            "git_commit": short}


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


def write_json(path, result):
    if path:
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
        log(f"wrote {path}")


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
    ap.add_argument("--cost-rounds", type=int, default=5,
                    help="then this many rounds alone and as many with a standby, alternating (0: none)")
    ap.add_argument("--cost-sets", type=int, default=3,
                    help="the cost rounds in this many sets (each --cost-rounds + --cost-rounds): "
                         "from 2 on, the first before the book is built and the rest after the "
                         "pauses; with --cost-only back to back")
    ap.add_argument("--cost-seconds", type=float, default=8, help="measured seconds of each cost round")
    ap.add_argument("--cost-clients", type=int, default=64, help="persistent clients of each cost round")
    ap.add_argument("--cost-only", action="store_true", help="only the standby's cost (no book, no kills)")
    ap.add_argument("--standby-poll-ms", type=lambda v: [int(x) for x in v.split(",")],
                    help="the standbys' --standby-poll-ms (default: the server's); in the cost "
                         "rounds a list, e.g. 5,20, compares them (the with-rounds take them in turn)")
    ap.add_argument("--standby-nice", type=int, default=0,
                    help="in the cost rounds, run the standby under nice -n N (it shares the cores)")
    ap.add_argument("--json", help="write every figure to this file (for writeup/results/takeover.json)")
    ap.add_argument("--db", help="database URL (default: private PostgreSQL in .local/takeover-bench-pg)")
    ap.add_argument("--pg-port", type=int, default=PG_PORT,
                    help=f"port of the private PostgreSQL when there is no --db (default {PG_PORT})")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--server-bin", help="exchange-server to run (default: BUILD_DIR/bin/exchange-server)")
    ap.add_argument("--client-bin", help="exchange-client for the cost rounds (default: BUILD_DIR/bin/exchange-client)")
    args = ap.parse_args()
    if args.cost_sets < 1:
        ap.error("--cost-sets must be 1 or more")
    binary = args.server_bin or os.path.join(args.build_dir, "bin", "exchange-server")
    client = args.client_bin or os.path.join(args.build_dir, "bin", "exchange-client")
    started = datetime.datetime.now().astimezone()
    result = {"date": started.strftime("%Y-%m-%d"), "started_at": started.isoformat(timespec="seconds"),
              "machine": machine(), "orders": args.orders, "clients": args.clients,
              "lease_ms": args.lease_ms, "load_seconds": args.load_seconds,
              "standby_poll_ms": (args.standby_poll_ms or [server_default(binary, "standby-poll-ms")])[0]}
    # A cluster this run starts is stopped at its end (the `finally` below); one that was
    # running already is someone else's.
    pg_started = False
    if args.db:
        db = args.db
    else:
        db, pg_started = start_local_pg(PG_DIR, args.pg_port)
        log(f"PostgreSQL in {os.path.relpath(PG_DIR, ROOT)} (port {args.pg_port}): "
            + ("started by this run, stopped at its end" if pg_started else "already running, used and left running"))
    servers = []
    for x in "ab":
        fd, log_path = tempfile.mkstemp(prefix=f"takeover_bench_{x}_", suffix=".log")
        os.close(fd)
        servers.append(Server(binary, db, free_port(), free_port(), log_path))
    logs = [s.log_path for s in servers]
    load = None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))
    try:
        sets = []
        if args.cost_only:
            log(f"the standby's cost alone (logs: {logs[0]}, {logs[1]})")
            for i in range(args.cost_sets):
                sets.append(cost_set(args, binary, client, db, servers, i + 1, "back to back"))
            result["cost"] = cost_result(args, sets)
            result["load1_end"] = os.getloadavg()[0]
            print(cost_summary(result["cost"]))
            write_json(args.json, result)
            return 0
        if args.cost_rounds and args.cost_sets > 1:
            sets.append(cost_set(args, binary, client, db, servers, 1, "before the book and the kills"))
        log(f"building the book: {args.orders:,} resting orders (logs: {logs[0]}, {logs[1]})")
        build_book(servers[0], db, args.orders)
        acked = []

        log(f"plain restart: {args.restarts} kills, each followed at once by a new server")
        restarts = []
        a = servers[0]
        a.start("--lease-ms", str(args.lease_ms))
        wait_accepting(a)
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
        server_sides = []  # the new leader's own log: (to serving, epoch bump, tail) in ms
        taken = {s.port: 0 for s in servers}  # takeover lines already in each one's log
        active, standby = servers
        active.start("--lease-ms", str(args.lease_ms))
        wait_accepting(active)
        standby.start("--standby", "--lease-ms", str(args.lease_ms))
        wait_following(standby)
        load = Load([s.port for s in servers], args.clients)
        for k in range(args.takeovers):
            time.sleep(args.load_seconds)
            killed = time.monotonic()
            active.kill()
            took = wait_answer(load, killed, standby.port)
            takeovers.append(took)
            server_side = takeover_log_ms(standby.log_path, taken[standby.port])
            taken[standby.port] += 1
            if server_side:
                server_sides.append(server_side)
            side = (f"; the server: serving {server_side[0]} ms after the lock came (epoch bump "
                    f"{server_side[1]} ms, tail and hand-over {server_side[2]} ms)") if server_side else ""
            log(f"takeover {k + 1}/{args.takeovers}: kill to first answered request {took * 1000:.0f} ms{side}")
            # The killed one comes back as the standby of the new leader.
            active.start("--standby", "--lease-ms", str(args.lease_ms))
            wait_following(active)
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
            wait_following(active)
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
        result.update({"restarts_s": restarts, "takeovers_s": takeovers, "pauses_s": pauses,
                       "acknowledged": len(acked), "unknown": unknown, "refused": refused,
                       "checks_passed": ok, "load1_end": os.getloadavg()[0],
                       "takeover_server_ms": [[int(v) for v in m] for m in server_sides]})
        if args.cost_rounds:
            for i in range(len(sets), args.cost_sets):
                sets.append(cost_set(args, binary, client, db, servers, i + 1, "after the pauses"))
            result["cost"] = cost_result(args, sets)
            print(cost_summary(result["cost"]))
        write_json(args.json, result)
        return 0 if ok else 1
    finally:
        if load:
            load.stopping = True
        for s in servers:
            s.stop()
        if pg_started:
            stop_local_pg(PG_DIR, say=log)


if __name__ == "__main__":
    sys.exit(main())
