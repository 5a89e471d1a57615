"""What each experiment runs, in full and in --quick.

An experiment turns its configuration into RunSpecs: one run = fresh server(s) started with
--reset on their own database, the bench client(s) against them, one CSV row. Repetitions of a
cell are separate runs (a new server and a new database each time), so the 95% confidence
intervals cover start-up and database state too, not only the bench's own variation.

A cell that needs a model or a flag the binaries do not have is skipped with a warning (and
listed in manifest.json), so the pipeline runs against whatever the server offers today.

The scaling experiment also measures the durable floor (exchange-floor: the server's framing,
sessions, concurrency models and group commit, one journal row per request, no XML and no
matching) in every (clients, cores) cell, with the same bench: its rows have system "floor"
and cells named floor-MODEL-cC-kK. Without the binary those runs are skipped with a warning.

The security experiment runs with authentication on (--principals): plaintext with an API-key
logon against TLS with a client certificate; its certificates are made at run time (the
runner, study/credentials.py), so a RunSpec only says which leg it is (RunSpec.security).
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field

MODELS = ["reactor", "per-request", "per-client", "pool", "fotp", "adaptive"]

# Seed 001's Table 1 (request classes): share of requests and service time. The paper's
# service times are 40 ms .. 2 s of I/O; here a request of k children sleeps k x io_ms in the
# handling thread (--simulated-io-ms-per-child), so a class is a number of children.
SEED001_CLASSES = [  # (name, share, children)
    ("small CPU (~40 ms)", 0.10, 1),
    ("100 kb file (~300 ms)", 0.20, 8),
    ("1000 kb file (~400 ms)", 0.20, 10),
    ("2000 kb file (~2 s)", 0.50, 50),
]

FULL = {
    "reps": 5,
    # Throughput vs clients: every model x clients x server cores.
    # floor_models: the durable floor (exchange-floor) in these models, same cells and bench.
    "scaling": {"models": MODELS, "clients": [1, 4, 16, 64, 256], "cores": [1, 2],
                "duration": 3, "warmup": 1, "persistent": True, "pool_threads": 4,
                "floor_models": ["reactor"]},
    # Seed 003, table 1: thread per client vs a 40-thread pool; N clients, one request each.
    "seed003_clients": {"clients": [20, 150, 200], "reps": 10, "pool_threads": 40},
    # Seed 003, table 2: 100 requests (100 clients, one each), 1 vs 2 server cores.
    "seed003_cores": {"cores": [1, 2], "requests": 100, "reps": 10, "orders_per_request": 5},
    # Latency percentiles vs the fixed pool's size, without and with simulated I/O.
    "poolsize": {"threads": [1, 2, 4, 8, 16, 64], "clients": 64, "sim_io": [0, 2],
                 "duration": 3, "warmup": 1},
    # Seed 001: Poisson arrivals of four request classes; fixed pool vs fotp vs adaptive.
    "seed001": {"rate": 100, "duration": 30, "io_ms": 40, "reps": 3, "min_threads": 10,
                "max_threads": 1000},
    # Seed 002: round trips to 1, 2, 4 replicas (each server its own database).
    "seed002": {"replicas": [1, 2, 4], "requests": 2000},
    # Seed 000: round trip by request index; client thread pool vs thread per request.
    "seed000": {"cases": [(1, 1), (1, 2), (1, 3), (4, 3)], "requests": 1000},
    # Seed 004, figure 9: memory vs threads with idle persistent connections.
    "memory": {"models": ["per-client", "pool"], "connections": [0, 100, 250, 500, 1000, 2000],
               "reps": 3, "hold": 3},
    # The cost of security: plaintext with a key logon vs TLS with a client certificate, legs
    # alternating within each repetition; connections -> clients (SECURITY_LEGS: the legs).
    "security": {"models": ["per-client", "reactor"], "connections": {"persistent": 64, "oneshot": 16},
                 "duration": 5, "warmup": 1},
}

QUICK = {
    "reps": 2,
    "scaling": {"models": MODELS, "clients": [4, 32], "cores": [2], "duration": 1, "warmup": 0,
                "persistent": True, "pool_threads": 4, "floor_models": ["reactor"]},
    "seed003_clients": {"clients": [20, 150], "reps": 2, "pool_threads": 40},
    "seed003_cores": {"cores": [1, 2], "requests": 100, "reps": 2, "orders_per_request": 5},
    "poolsize": {"threads": [1, 8], "clients": 16, "sim_io": [0, 2], "duration": 1, "warmup": 0},
    "seed001": {"rate": 40, "duration": 4, "io_ms": 10, "reps": 2, "min_threads": 10,
                "max_threads": 1000},
    "seed002": {"replicas": [2, 4], "requests": 200},
    "seed000": {"cases": [(1, 2), (4, 3)], "requests": 100},
    "memory": {"models": ["per-client", "pool"], "connections": [0, 200], "reps": 2, "hold": 1},
    "security": {"models": ["per-client", "reactor"], "connections": {"persistent": 8, "oneshot": 4},
                 "duration": 0.5, "warmup": 0},
}


@dataclass(frozen=True)
class Leg:
    """One side of the security comparison: its cell suffix and label, the CSV's transport,
    resumption and tls_version, and the bench's TLS flags beyond the client certificate (None:
    plaintext with an API-key logon)."""
    name: str
    label: str
    transport: str
    resumption: str = ""
    tls_version: str = ""
    tls_flags: tuple[str, ...] | None = None


PLAIN = Leg("plain", "plaintext, key logon", "plaintext")
# connections -> legs, the plaintext reference first (scripts/benchmark.py --tls's legs). A
# persistent session makes one handshake per client, so resumption matters only one-shot.
SECURITY_LEGS = {
    "persistent": [PLAIN, Leg("tls", "TLS, client certificate", "tls", "on", "1.3", ("--tls-resume", "on"))],
    "oneshot": [
        PLAIN,
        Leg("tls-full", "TLS, full handshakes", "tls", "off", "1.3", ("--tls-resume", "off")),
        Leg("tls13-resumed", "TLS 1.3, resumed", "tls", "on", "1.3",
            ("--tls-resume", "on", "--tls-max-version", "1.3")),
        Leg("tls12-resumed", "TLS 1.2, resumed (session id)", "tls", "on", "1.2",
            ("--tls-resume", "on", "--tls-max-version", "1.2")),
    ],
}


@dataclass
class ServerSpec:
    model: str
    args: list[str]
    cpu_list: str | None  # taskset -c; None = unpinned
    db: str               # database name (each concurrent server has its own)
    binary: str = "server"  # "server" (exchange-server) or "floor" (exchange-floor)


@dataclass
class Stream:
    """One bench process. Ports/--replicas, --json and --csv are added by the runner."""
    args: list[str]
    name: str = "bench"
    delay_s: float = 0.0  # start this long after the first stream (to line up measurements)


@dataclass
class RunSpec:
    experiment: str
    cell: str
    rep: int
    params: dict          # CSV columns describing the cell
    servers: list[ServerSpec]
    streams: list[Stream]
    keep_csv: bool = False     # keep the per-request CSV (gzipped)
    metrics: bool = False      # pass --metrics and keep the file
    hold_s: float = 0.0        # no streams: how long to watch the server
    idle_connections: int = 0  # no streams: idle persistent sessions held meanwhile (idle.py)
    timeout_s: float = 300.0
    needs_flags: list[str] = field(default_factory=list)         # server flags
    needs_client_flags: list[str] = field(default_factory=list)  # bench flags
    security: Leg | None = None  # with --principals: a leg of the security experiment


@dataclass
class Context:
    models: list[str]
    nproc: int
    skipped: list[str] = field(default_factory=list)
    # Models of exchange-floor's --help; None when the binary is absent (floor runs skipped).
    floor_models: list[str] | None = None
    floor_missing: str = "exchange-floor is not built"

    def skip(self, msg: str) -> None:
        if msg not in self.skipped:
            self.skipped.append(msg)


def cpu_list(cores: int | None) -> str | None:
    if cores is None:
        return None
    return "0" if cores == 1 else f"0-{cores - 1}"


def model_args(model: str, pool_threads: int = 4) -> list[str]:
    if model == "pool":
        return ["--threads", str(pool_threads)]
    return []


def _usable_cores(ctx: Context, cores: list[int], exp: str) -> list[int]:
    ok = [c for c in cores if c <= ctx.nproc]
    for c in cores:
        if c > ctx.nproc:
            ctx.skip(f"{exp}: {c} cores asked, this machine has {ctx.nproc}")
    return ok


def _usable_models(ctx: Context, models: list[str], exp: str) -> list[str]:
    ok = [m for m in models if m in ctx.models]
    for m in models:
        if m not in ctx.models:
            ctx.skip(f"{exp}: model '{m}' is not in this server build")
    return ok


def scaling(cfg: dict, reps: int, ctx: Context) -> list[RunSpec]:
    """Every model x clients x cores, and the durable floor in the same cells. The runs go
    clients -> repetition -> cores -> system, so the models and the floor of one cell, and the
    1- and 2-core cells of one client count, run side by side: a stretch of load from elsewhere
    on this shared machine (another checkout's build or tests) hits them alike instead of
    landing on one core count or on the floor alone."""
    runs = []
    floor = []
    if cfg.get("floor_models"):
        if ctx.floor_models is None:
            ctx.skip(f"scaling: the durable floor is not measured ({ctx.floor_missing})")
        else:
            for m in cfg["floor_models"]:
                if m in ctx.floor_models:
                    floor.append(m)
                else:
                    ctx.skip(f"scaling: the durable floor has no model '{m}'")
    models = _usable_models(ctx, cfg["models"], "scaling")
    systems = [("server", m) for m in models] + [("floor", m) for m in floor]
    cores_list = _usable_cores(ctx, cfg["cores"], "scaling")
    for clients in cfg["clients"]:
        args = ["--mode", "closed", "--clients", str(clients), "--duration",
                str(cfg["duration"]), "--warmup", str(cfg["warmup"]), "--workload",
                "orders", "--timeout", "60"]
        if cfg["persistent"]:
            args.append("--persistent")
        for rep in range(1, reps + 1):
            for cores in cores_list:
                for system, model in systems:
                    prefix = "floor-" if system == "floor" else ""
                    runs.append(RunSpec(
                        "scaling", f"{prefix}{model}-c{clients}-k{cores}", rep,
                        {"system": system, "model": model,
                         "threads": cfg["pool_threads"] if model == "pool" else "",
                         "cores": cores, "clients": clients, "workload": "orders",
                         "mode": "closed", "persistent": int(cfg["persistent"]),
                         "duration_s": cfg["duration"], "warmup_s": cfg["warmup"]},
                        [ServerSpec(model, model_args(model, cfg["pool_threads"]), cpu_list(cores),
                                    "writeup_floor" if system == "floor" else "writeup", system)],
                        [Stream(args + ["--seed", str(rep)])],
                        timeout_s=cfg["duration"] + cfg["warmup"] + 120))
    return runs


def seed003_clients(cfg: dict, reps: int, ctx: Context) -> list[RunSpec]:
    runs = []
    systems = [("per-client", []), ("pool", ["--threads", str(cfg["pool_threads"])])]
    for model, margs in systems:
        if model not in ctx.models:
            ctx.skip(f"seed003_clients: model '{model}' is not in this server build")
            continue
        for clients in cfg["clients"]:
            for rep in range(1, cfg.get("reps", reps) + 1):
                args = ["--mode", "closed", "--clients", str(clients), "--requests", str(clients),
                        "--workload", "orders", "--timeout", "60", "--seed", str(rep)]
                runs.append(RunSpec(
                    "seed003_clients", f"{model}-c{clients}", rep,
                    {"model": model, "threads": cfg["pool_threads"] if model == "pool" else "",
                     "cores": ctx.nproc, "clients": clients, "workload": "orders",
                     "mode": "closed", "persistent": 0, "requests_target": clients},
                    [ServerSpec(model, margs, None, "writeup")],
                    [Stream(args)], timeout_s=180))
    return runs


def seed003_cores(cfg: dict, reps: int, ctx: Context) -> list[RunSpec]:
    runs = []
    if "per-client" not in ctx.models:
        ctx.skip("seed003_cores: model 'per-client' is not in this server build")
        return runs
    kinds = {
        "create": ["--workload", "create", "--accounts-per-request", "1"],
        "transactions": ["--workload", "orders", "--orders-per-request",
                         str(cfg["orders_per_request"])],
    }
    n = cfg["requests"]
    for cores in _usable_cores(ctx, cfg["cores"], "seed003_cores"):
        for kind, kargs in kinds.items():
            for rep in range(1, cfg.get("reps", reps) + 1):
                args = ["--mode", "closed", "--clients", str(n), "--requests", str(n),
                        "--timeout", "60", "--seed", str(rep), *kargs]
                runs.append(RunSpec(
                    "seed003_cores", f"{kind}-k{cores}", rep,
                    {"model": "per-client", "cores": cores, "clients": n, "workload": kind,
                     "orders_per_request": cfg["orders_per_request"] if kind == "transactions" else "",
                     "mode": "closed", "persistent": 0, "requests_target": n},
                    [ServerSpec("per-client", [], cpu_list(cores), "writeup")],
                    [Stream(args)], timeout_s=180))
    return runs


def poolsize(cfg: dict, reps: int, ctx: Context) -> list[RunSpec]:
    runs = []
    if "pool" not in ctx.models:
        ctx.skip("poolsize: model 'pool' is not in this server build")
        return runs
    for io in cfg["sim_io"]:
        for threads in cfg["threads"]:
            for rep in range(1, reps + 1):
                sargs = ["--threads", str(threads)]
                needs = []
                if io:
                    sargs += ["--simulated-io-ms-per-child", str(io)]
                    needs = ["simulated-io-ms-per-child"]
                args = ["--mode", "closed", "--clients", str(cfg["clients"]), "--duration",
                        str(cfg["duration"]), "--warmup", str(cfg["warmup"]), "--workload",
                        "orders", "--persistent", "--timeout", "60", "--seed", str(rep)]
                runs.append(RunSpec(
                    "poolsize", f"pool-t{threads}-io{io}", rep,
                    {"model": "pool", "threads": threads, "cores": ctx.nproc,
                     "clients": cfg["clients"], "workload": "orders", "mode": "closed",
                     "persistent": 1, "sim_io_ms": io, "duration_s": cfg["duration"],
                     "warmup_s": cfg["warmup"]},
                    [ServerSpec("pool", sargs, None, "writeup")], [Stream(args)],
                    timeout_s=cfg["duration"] + cfg["warmup"] + 120, needs_flags=needs))
    return runs


def seed001_systems(cfg: dict) -> list[tuple[str, str, list[str]]]:
    """(label, model, server args): a fixed pool sized at the arrival rate (where the paper's
    ThreadPoolExecutor settled), the paper's FOTP, our adaptive pool."""
    dyn = ["--min-threads", str(cfg["min_threads"]), "--max-threads", str(cfg["max_threads"])]
    return [
        (f"pool-{cfg['rate']}", "pool", ["--threads", str(cfg["rate"])]),
        ("fotp", "fotp", dyn),
        ("adaptive", "adaptive", dyn),
    ]


def seed001(cfg: dict, reps: int, ctx: Context) -> list[RunSpec]:
    runs = []
    mean_st = sum(share * k * cfg["io_ms"] for _, share, k in SEED001_CLASSES) / 1000.0
    for label, model, margs in seed001_systems(cfg):
        if model not in ctx.models:
            ctx.skip(f"seed001: model '{model}' is not in this server build")
            continue
        for rep in range(1, cfg.get("reps", reps) + 1):
            streams = []
            # Each bench first sets up (an account, a symbol, one order per query child), and the
            # server sleeps io_ms per child there too; start the quick setups later so that all
            # classes begin measuring at about the same moment.
            setup_s = [(2 + k) * cfg["io_ms"] / 1000.0 for _, _, k in SEED001_CLASSES]
            for i, (_, share, children) in enumerate(SEED001_CLASSES):
                rate = cfg["rate"] * share
                st = children * cfg["io_ms"] / 1000.0
                # Enough sender threads that the client never queues (Little: rate x time in
                # the system, with room for the server's own queueing).
                senders = int(max(16, rate * st * 4 + 16))
                streams.append(Stream([
                    "--mode", "open", "--rate", f"{rate:g}", "--duration", str(cfg["duration"]),
                    "--workload", "query", "--orders-per-request", str(children),
                    "--senders", str(senders), "--max-inflight", "100000", "--timeout", "300",
                    # One account per class, in the bench's id range (900000000 up).
                    "--accounts", "1", "--symbols", "1",
                    "--account-base", str(900000000 + 10000 * (i + 1)),
                    "--seed", str(100 * rep + i)], name=f"class{i + 1}",
                    delay_s=max(setup_s) - setup_s[i]))
            runs.append(RunSpec(
                "seed001", label, rep,
                {"model": model, "threads": cfg["rate"] if model == "pool" else "",
                 "cores": ctx.nproc, "workload": "query-classes", "mode": "open",
                 "rate": cfg["rate"], "sim_io_ms": cfg["io_ms"], "duration_s": cfg["duration"],
                 "persistent": 0, "note": f"mean service {mean_st:.3f} s"},
                [ServerSpec(model, margs + ["--simulated-io-ms-per-child", str(cfg["io_ms"])],
                            None, "writeup")],
                streams, keep_csv=True, metrics=True,
                timeout_s=cfg["duration"] + 400,
                needs_flags=["simulated-io-ms-per-child", "metrics"]))
    return runs


def seed002(cfg: dict, reps: int, ctx: Context) -> list[RunSpec]:
    runs = []
    if "pool" not in ctx.models:
        ctx.skip("seed002: model 'pool' is not in this server build")
        return runs
    for n in cfg["replicas"]:
        for rep in range(1, reps + 1):
            args = ["--mode", "closed", "--clients", "1", "--requests", str(cfg["requests"]),
                    "--workload", "orders", "--client-threads", "pool", "--timeout", "60",
                    "--seed", str(rep)]
            runs.append(RunSpec(
                "seed002", f"replicas{n}", rep,
                {"model": "pool", "threads": 4, "cores": ctx.nproc, "clients": 1,
                 "replicas": n, "workload": "orders", "mode": "closed", "persistent": 0,
                 "client_threads": "pool", "requests_target": cfg["requests"]},
                [ServerSpec("pool", ["--threads", "4"], None, f"writeup_r{i + 1}") for i in range(n)],
                [Stream(args)], keep_csv=True, timeout_s=600,
                needs_client_flags=["replicas"] if n > 1 else []))
    return runs


def seed000(cfg: dict, reps: int, ctx: Context) -> list[RunSpec]:
    runs = []
    if "pool" not in ctx.models:
        ctx.skip("seed000: model 'pool' is not in this server build")
        return runs
    for clients, replicas in cfg["cases"]:
        for threads in ("pool", "spawn"):
            for rep in range(1, reps + 1):
                args = ["--mode", "closed", "--clients", str(clients), "--requests",
                        str(cfg["requests"]), "--workload", "orders", "--client-threads", threads,
                        "--timeout", "60", "--seed", str(rep)]
                runs.append(RunSpec(
                    "seed000", f"c{clients}-r{replicas}-{threads}", rep,
                    {"model": "pool", "threads": 4, "cores": ctx.nproc, "clients": clients,
                     "replicas": replicas, "client_threads": threads, "workload": "orders",
                     "mode": "closed", "persistent": 0, "requests_target": cfg["requests"]},
                    [ServerSpec("pool", ["--threads", "4"], None, f"writeup_r{i + 1}")
                     for i in range(replicas)],
                    [Stream(args)], keep_csv=True, timeout_s=600,
                    needs_client_flags=["client-threads"] + (["replicas"] if replicas > 1 else [])))
    return runs


def memory(cfg: dict, reps: int, ctx: Context) -> list[RunSpec]:
    runs = []
    for model in _usable_models(ctx, cfg["models"], "memory"):
        for n in cfg["connections"]:
            for rep in range(1, cfg.get("reps", reps) + 1):
                runs.append(RunSpec(
                    "memory", f"{model}-n{n}", rep,
                    {"model": model, "threads": 4 if model == "pool" else "",
                     "cores": ctx.nproc, "clients": n, "persistent": 1, "workload": "idle",
                     "mode": "closed"},
                    [ServerSpec(model, model_args(model), None, "writeup")], [],
                    metrics=True, hold_s=cfg["hold"], idle_connections=n,
                    timeout_s=cfg["hold"] + 180))
    return runs


def security(cfg: dict, reps: int, ctx: Context) -> list[RunSpec]:
    """Per model and connection kind, every leg of SECURITY_LEGS in each repetition, in
    reverse in even ones, so that drift falls on each side in turn and the legs of one
    repetition (paired in the report) run back to back."""
    if not shutil.which("openssl"):
        ctx.skip("security: no openssl command to make the certificates with")
        return []
    runs = []
    for model in _usable_models(ctx, cfg["models"], "security"):
        for conn, clients in cfg["connections"].items():
            for rep in range(1, reps + 1):
                legs = SECURITY_LEGS[conn]
                for leg in legs if rep % 2 else legs[::-1]:
                    runs.append(security_run(cfg, ctx, model, conn, clients, rep, leg))
    return runs


def security_run(cfg: dict, ctx: Context, model: str, conn: str, clients: int, rep: int,
                 leg: Leg) -> RunSpec:
    persistent = conn == "persistent"
    args = ["--mode", "closed", "--clients", str(clients), "--duration", str(cfg["duration"]),
            "--warmup", str(cfg["warmup"]), "--workload", "orders", "--timeout", "60",
            "--seed", str(rep)] + (["--persistent"] if persistent else [])
    needs_c = ["tls", "principal"] + [f.lstrip("-") for f in leg.tls_flags or () if f.startswith("--")]
    return RunSpec(
        "security", f"{model}-{conn}-{leg.name}", rep,
        {"model": model, "threads": "", "cores": ctx.nproc, "clients": clients, "workload": "orders",
         "mode": "closed", "persistent": int(persistent), "duration_s": cfg["duration"],
         "warmup_s": cfg["warmup"], "transport": leg.transport, "resumption": leg.resumption,
         "tls_version": leg.tls_version},
        [ServerSpec(model, [], None, "writeup")], [Stream(args)],
        timeout_s=cfg["duration"] + cfg["warmup"] + 120,
        needs_flags=["principals", "tls-cert", "tls-client-ca"], needs_client_flags=needs_c, security=leg)


EXPERIMENTS = {
    "scaling": scaling,
    "seed003_clients": seed003_clients,
    "seed003_cores": seed003_cores,
    "poolsize": poolsize,
    "seed001": seed001,
    "seed002": seed002,
    "seed000": seed000,
    "memory": memory,
    "security": security,
}


def plan(config: dict, ctx: Context, only: list[str] | None = None,
         reps_override: int | None = None) -> list[RunSpec]:
    runs = []
    for name, build in EXPERIMENTS.items():
        if only and name not in only:
            continue
        cfg = dict(config[name])
        if reps_override:
            cfg["reps"] = reps_override
        runs += build(cfg, reps_override or config["reps"], ctx)
    return runs
