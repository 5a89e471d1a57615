"""Processes of one run: exchange servers (pinned with taskset), the bench client, PostgreSQL.

Also what they cost: CPU seconds of the server (from /proc/PID/stat), of PostgreSQL (the
postmaster with every child, live or reaped, from /proc), of the client (its rusage, from
wait4), and PostgreSQL's commit counter (pg_stat_database.xact_commit).
"""
from __future__ import annotations

import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

CLK_TCK = os.sysconf("SC_CLK_TCK")
PORT_RANGE = (24000, 24999)  # ours, by agreement with the other engineers


def warn(msg: str) -> None:
    print(f"WARNING: {msg}", flush=True)


# ---- stopping what a script started ---------------------------------------------------------

def stop_process(proc: subprocess.Popen, timeout: float = 30.0, what: str = "process") -> int | None:
    """SIGTERM (a server finishes what is in flight), SIGKILL after `timeout`; reaps it."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            warn(f"{what} (pid {proc.pid}) ignored SIGTERM for {timeout:.0f} s: SIGKILL")
            proc.kill()
            proc.wait()
    return proc.returncode


class Reaper:
    """Stops what a script started however it ends: normal exit, exception, Ctrl-C (SIGINT)
    or SIGTERM. Processes get stop_process(), other things (a PostgreSQL cluster) the
    callable registered for them; newest first. Use it as a context manager around the
    script's work: inside, SIGTERM raises SystemExit(143) so that the way out runs, and the
    cleanup itself ignores SIGINT and SIGTERM so that a second Ctrl-C cannot cut it short.

        with Reaper("benchmark") as reaper:
            server = reaper.process(subprocess.Popen([...]), "exchange-server")
            ...
            reaper.stop(server)        # stopped now, forgotten
            reaper.call(stop_pg, "the PostgreSQL it started")
    """

    def __init__(self, name: str = "", timeout: float = 30.0):
        self.name, self.timeout = name, timeout
        self._items: list[tuple[object, str]] = []  # (Popen or callable, what)
        self._old_term = None

    def say(self, msg: str) -> None:
        print(f"{self.name}: {msg}" if self.name else msg, flush=True)

    def process(self, proc: subprocess.Popen, what: str) -> subprocess.Popen:
        self._items.append((proc, what))
        return proc

    def call(self, fn, what: str) -> None:
        self._items.append((fn, what))

    def stop(self, proc: subprocess.Popen) -> int | None:
        """Stops a registered process now and forgets it."""
        what = next((w for p, w in self._items if p is proc), "process")
        self._items = [(p, w) for p, w in self._items if p is not proc]
        return stop_process(proc, self.timeout, what)

    def close(self) -> None:
        old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
        old_term = signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            while self._items:
                item, what = self._items.pop()
                try:
                    if isinstance(item, subprocess.Popen):
                        if item.poll() is None:
                            self.say(f"stopping {what} (pid {item.pid}), which it started")
                        stop_process(item, self.timeout, what)
                    else:
                        item()
                except Exception as e:  # keep going: the rest must be stopped too
                    warn(f"could not stop {what}: {e}")
        finally:
            signal.signal(signal.SIGINT, old_int)
            signal.signal(signal.SIGTERM, old_term)

    def __enter__(self) -> "Reaper":
        self._old_term = signal.signal(signal.SIGTERM, self._on_sigterm)
        return self

    @staticmethod
    def _on_sigterm(signum, frame):
        raise SystemExit(128 + signum)

    def __exit__(self, *exc) -> bool:
        try:
            self.close()
        finally:
            signal.signal(signal.SIGTERM, self._old_term or signal.SIG_DFL)
        return False


# ---- what the binaries can do ---------------------------------------------------------------

@dataclass
class Caps:
    """Flags (and, for the server, concurrency models) a binary's --help lists."""
    flags: set[str] = field(default_factory=set)
    models: list[str] = field(default_factory=list)

    def has(self, flag: str) -> bool:
        return flag.lstrip("-") in self.flags


def _help_text(cmd: list[str]) -> str:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RuntimeError(f"cannot run {' '.join(cmd)}: {e}") from e
    return p.stdout + p.stderr


def server_caps(server_bin: str) -> Caps:
    return parse_server_help(_help_text([server_bin, "--help"]))


def parse_server_help(text: str) -> Caps:
    """Flags and concurrency models from exchange-server --help (Boost.Program_options layout)."""
    caps = Caps(flags=set(re.findall(r"--([a-z0-9][a-z0-9-]*)", text)))
    # The models are the "name: description" lines of --concurrency's description: indented two
    # more than the description column (wrapped text sits at the column itself), up to the next
    # flag, which starts at column 2.
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.lstrip().startswith("--concurrency"):
            m = re.search(r"concurrency model:", line)
            col = m.start() if m else None
            for nxt in lines[i + 1:]:
                if re.match(r"^  --[a-z]", nxt):
                    break
                mm = re.match(r"^(\s*)([a-z][a-z0-9-]*): ", nxt)
                if mm and (col is None or len(mm.group(1)) > col):
                    caps.models.append(mm.group(2))
            break
    return caps


def client_caps(client_bin: str) -> Caps:
    text = _help_text([client_bin, "bench", "--help"])
    return Caps(flags=set(re.findall(r"--([a-z0-9][a-z0-9-]*)", text)))


def load1() -> float | None:
    """The 1-minute load average of the machine (other people's jobs included)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def cpu_pressure10() -> float | None:
    """PSI: share (%) of the last 10 s in which some runnable task waited for a CPU."""
    try:
        with open("/proc/pressure/cpu") as f:
            for line in f:
                if line.startswith("some"):
                    return float(line.split("avg10=")[1].split()[0])
    except (OSError, IndexError, ValueError):
        pass
    return None


def describe_binary(path: str) -> dict:
    """Which build a run used: path, modification time (UTC) and the start of its SHA-256 (the
    git commit in runs.csv is the checkout's, which a later rebuild may not match)."""
    import hashlib
    from datetime import datetime, timezone
    try:
        st = os.stat(path)
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError as e:
        return {"path": path, "error": str(e)}
    return {"path": path, "sha256": h.hexdigest()[:16],
            "mtime": datetime.fromtimestamp(st.st_mtime, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}


# ---- PostgreSQL -----------------------------------------------------------------------------

def _psql_bin() -> str:
    for cand in ("/usr/lib/postgresql/15/bin/psql", shutil.which("psql") or ""):
        if cand and os.access(cand, os.X_OK):
            return cand
    raise RuntimeError("psql not found (apt-get install postgresql-client-15)")


LOCAL_PG = Path(__file__).resolve().parents[2] / "scripts" / "local-pg.sh"


def start_local_pg(data_dir: str, port: int, reaper: Reaper | None = None) -> tuple[str, bool]:
    """The URL of the private cluster in data_dir (scripts/local-pg.sh), started if it was not
    running, and whether this call started it. Only a cluster this call started is handed to
    `reaper` to stop at exit (registered before starting it, so that an interruption during
    the start stops it too); one that was already running belongs to someone else."""
    status = subprocess.run([str(LOCAL_PG), "status", data_dir], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL).returncode
    ours = status == 3  # 0: running; 3: not running; anything else: unknown, so not ours
    if ours and reaper is not None:
        reaper.call(lambda: stop_local_pg(data_dir, say=reaper.say),
                    f"the PostgreSQL in {data_dir}")
    out = subprocess.run([str(LOCAL_PG), "start", data_dir, str(port)], check=True,
                         capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1], ours


def stop_local_pg(data_dir: str, say=print) -> None:
    subprocess.run([str(LOCAL_PG), "stop", data_dir], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    say(f"stopped the PostgreSQL it started in {data_dir}")


def with_database(url: str, dbname: str) -> str:
    """The same server URL, another database."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + dbname, parts.query, parts.fragment))


class Postgres:
    """The PostgreSQL cluster behind `url` (a postgresql:// URI)."""

    def __init__(self, url: str):
        self.url = url
        self.psql = _psql_bin()
        self.dbname = urlsplit(url).path.lstrip("/") or "postgres"
        self.postmaster_pid = self._find_postmaster()

    def query(self, sql: str, db: str | None = None) -> str:
        target = with_database(self.url, db) if db else self.url
        p = subprocess.run([self.psql, target, "-XAtq", "-v", "ON_ERROR_STOP=1", "-c", sql],
                           capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            raise RuntimeError(f"psql failed ({sql!r}): {p.stderr.strip()}")
        return p.stdout.strip()

    def version(self) -> str:
        try:
            return self.query("SHOW server_version")
        except RuntimeError:
            return ""

    def ensure_database(self, name: str) -> str:
        """Creates database `name` if missing; returns its URL."""
        if self.query(f"SELECT 1 FROM pg_database WHERE datname = '{name}'", db="postgres") != "1":
            self.query(f'CREATE DATABASE "{name}"', db="postgres")
        return with_database(self.url, name)

    def commits(self, names: list[str]) -> int | None:
        """Committed transactions so far in these databases (pg_stat_database.xact_commit).

        PostgreSQL 15 publishes a backend's counts when its transaction ends (at most once a
        second) and when it exits; read this after the servers have stopped."""
        try:
            quoted = ",".join(f"'{n}'" for n in names)
            out = self.query("SELECT pg_stat_force_next_flush(); SELECT coalesce(sum(xact_commit), 0) "
                             f"FROM pg_stat_database WHERE datname IN ({quoted})", db="postgres")
            return int(out.splitlines()[-1])
        except (RuntimeError, ValueError):
            return None

    def _find_postmaster(self) -> int | None:
        """The postmaster's pid, if the cluster runs on this machine (from its data directory)."""
        try:
            data_dir = self.query("SHOW data_directory")
            with open(os.path.join(data_dir, "postmaster.pid")) as f:
                pid = int(f.readline())
            os.kill(pid, 0)
            return pid
        except (RuntimeError, OSError, ValueError):
            pass
        return None

    def cpu_seconds(self) -> float | None:
        """CPU seconds used by the cluster so far: the postmaster (with its reaped children)
        plus every live child (backends, checkpointer, WAL writer, ...)."""
        if self.postmaster_pid is None:
            return None
        total = 0
        for pid in _pids():
            st = _stat(pid)
            if st is None:
                continue
            if pid == self.postmaster_pid:
                total += st["utime"] + st["stime"] + st["cutime"] + st["cstime"]
            elif st["ppid"] == self.postmaster_pid:
                total += st["utime"] + st["stime"]
        return total / CLK_TCK


def _pids() -> list[int]:
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def _stat(pid: int) -> dict | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            raw = f.read()
    except OSError:
        return None
    # comm may hold spaces and parentheses: split after the last ')'.
    rest = raw[raw.rfind(")") + 2:].split()
    return {"ppid": int(rest[1]), "utime": int(rest[11]), "stime": int(rest[12]),
            "cutime": int(rest[13]), "cstime": int(rest[14])}


def proc_status(pid: int) -> dict:
    """Threads, VmRSS and VmSize (KiB) of a live process; empty if it is gone."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("Threads", "VmRSS", "VmSize"):
                    out[key] = int(value.split()[0])
    except OSError:
        pass
    return out


# ---- ports ----------------------------------------------------------------------------------

_next_port = PORT_RANGE[0] + (os.getpid() * 7) % 500


def free_port() -> int:
    """A port in our range that nothing listens on now (walks the range, wraps)."""
    global _next_port
    for _ in range(PORT_RANGE[1] - PORT_RANGE[0] + 1):
        port = _next_port
        _next_port = PORT_RANGE[0] + (_next_port + 1 - PORT_RANGE[0]) % (PORT_RANGE[1] - PORT_RANGE[0] + 1)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(0.2)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                continue
        return port
    raise RuntimeError(f"no free port in {PORT_RANGE}")


def _raise_nofile() -> None:
    """Child processes may open as many descriptors as the hard limit allows (idle sessions)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


# ---- the server -----------------------------------------------------------------------------

class ModelUnknown(Exception):
    """The server does not know the requested --concurrency model."""


class ServerFailed(Exception):
    pass


class Server:
    """One exchange-server process, optionally pinned to a CPU list with taskset."""

    def __init__(self, server_bin: str, db_url: str, model: str, args: list[str],
                 cpu_list: str | None, log_path: Path, metrics_path: Path | None = None):
        self.port = free_port()
        cmd = [server_bin, "--port", str(self.port), "--bind", "127.0.0.1", "--db", db_url,
               "--concurrency", model, "--reset", *args]
        if metrics_path is not None:
            cmd += ["--metrics", str(metrics_path)]
        if cpu_list:
            cmd = ["taskset", "-c", cpu_list, *cmd]
        self.cmd = cmd
        self.log_path = log_path
        self.max_threads = 0
        self.max_rss_kb = 0
        self.max_vsz_kb = 0
        self.max_sockets = 0
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(log_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, preexec_fn=_raise_nofile)
        self._wait_ready()

    def _wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._log.close()
                text = self.log_path.read_text(errors="replace")
                if "unknown --concurrency" in text:
                    raise ModelUnknown(text.strip().splitlines()[0])
                raise ServerFailed(f"server exited with {self.proc.returncode}: {text.strip()[-500:]}")
            try:
                with open(self.log_path, errors="replace") as f:
                    if "serving on" in f.read():
                        return
            except OSError:
                pass
            time.sleep(0.02)
        self.stop()
        raise ServerFailed(f"server not ready after {timeout:.0f} s (log {self.log_path})")

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def cpu_seconds(self) -> float | None:
        st = _stat(self.proc.pid)
        return None if st is None else (st["utime"] + st["stime"]) / CLK_TCK

    def sockets(self) -> int:
        """Open sockets of the server now (listener, clients, PostgreSQL)."""
        n = 0
        try:
            for fd in os.listdir(f"/proc/{self.proc.pid}/fd"):
                try:
                    if os.readlink(f"/proc/{self.proc.pid}/fd/{fd}").startswith("socket:"):
                        n += 1
                except OSError:
                    pass
        except OSError:
            pass
        return n

    def sample(self) -> dict:
        """Threads, memory and sockets now; keeps the maxima."""
        self.max_sockets = max(self.max_sockets, self.sockets())
        s = proc_status(self.proc.pid)
        self.max_threads = max(self.max_threads, s.get("Threads", 0))
        self.max_rss_kb = max(self.max_rss_kb, s.get("VmRSS", 0))
        self.max_vsz_kb = max(self.max_vsz_kb, s.get("VmSize", 0))
        return s

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM (finishes what is in flight), SIGKILL after `timeout`."""
        stop_process(self.proc, timeout, f"server on port {self.port}")
        if not self._log.closed:
            self._log.close()
        return self.proc.returncode


# ---- the bench client -----------------------------------------------------------------------

@dataclass
class BenchResult:
    rc: int
    json: dict | None
    cpu_s: float
    wall_s: float
    stderr_tail: str
    cmd: list[str]


class Bench:
    """One `exchange-client bench` process; start() returns at once, wait() collects it."""

    def __init__(self, client_bin: str, args: list[str], json_path: Path, log_path: Path):
        self.cmd = [client_bin, "bench", *args, "--json", str(json_path), "--no-progress"]
        self.json_path = json_path
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None
        self.started = 0.0
        self.start_unix = 0.0

    def start(self) -> "Bench":
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "w")
        self.started = time.monotonic()
        self.start_unix = time.time()
        self.proc = subprocess.Popen(self.cmd, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, preexec_fn=_raise_nofile)
        return self

    def try_reap(self) -> BenchResult | None:
        """The result if the process has exited (reaped with its rusage), else None."""
        pid, status, rusage = os.wait4(self.proc.pid, os.WNOHANG)
        return self._result(status, rusage) if pid else None

    def try_reap_peek(self) -> bool:
        """Whether the process has exited, without reaping it."""
        try:
            return os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True

    def kill(self) -> BenchResult:
        """SIGKILL (for runs whose clients would idle for minutes) and reap."""
        if not self.try_reap_peek():
            self.proc.kill()
        _, status, rusage = os.wait4(self.proc.pid, 0)
        return self._result(status, rusage)

    def interrupt(self) -> BenchResult:
        """Ctrl-C (the bench reports what it measured), SIGKILL 10 s later."""
        warn(f"bench overran its time: SIGINT ({' '.join(self.cmd[:4])} ...)")
        self.proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            r = self.try_reap()
            if r:
                return r
            time.sleep(0.05)
        self.proc.kill()
        _, status, rusage = os.wait4(self.proc.pid, 0)
        return self._result(status, rusage)

    def _result(self, status: int, rusage) -> BenchResult:
        wall = time.monotonic() - self.started
        rc = os.waitstatus_to_exitcode(status)
        self.proc.returncode = rc  # reaped here, not by Popen
        self._log.close()
        data = None
        if self.json_path.exists():
            try:
                data = json.loads(self.json_path.read_text())
            except json.JSONDecodeError:
                data = None
        tail = self.log_path.read_text(errors="replace")[-800:]
        return BenchResult(rc, data, rusage.ru_utime + rusage.ru_stime, wall, tail, self.cmd)


def run_quiet(cmd: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          preexec_fn=_raise_nofile)


def tmpdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="writeup-"))
