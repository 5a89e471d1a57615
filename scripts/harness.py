"""What the scripts share: a private PostgreSQL, exchange-server processes, the admin port, the
bench client.

The scripts are run as `python3 scripts/X.py`, so Python puts scripts/ first on sys.path and
they `import harness` as a sibling module (as they import wire). Some of what is here lives in
writeup/study/procs.py, which the study's sweep uses too, and is re-exported from there: the
Reaper, stop_process, free_port (ports 24000-24999, the range agreed with the other engineers),
start_local_pg, stop_local_pg, Postgres (psql queries on a cluster, its CPU time and commits),
proc_status (a process's threads and memory), load1 (the load average) and CLK_TCK;
study/machine.py's cpu_model; and study/credentials.py's make_credentials and security_flags
(certificates, principals and the flags of a TLS or key-logon leg). The protocol itself (one request on a connection) is wire.py's.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "writeup"))
from study.credentials import make_credentials, security_flags  # noqa: E402
from study.machine import cpu_model, git_commit  # noqa: E402
from study.procs import (CLK_TCK, Postgres, Reaper, free_port, load1, proc_status, start_local_pg,  # noqa: E402
                         stop_local_pg, stop_process)

__all__ = ["ROOT", "LOCAL_PG", "BENCH_WORKLOAD", "CLK_TCK", "Reaper", "free_port", "start_local_pg",
           "stop_local_pg", "stop_process", "Postgres", "proc_status", "load1", "local_pg", "wait_listening",
           "http_get", "metrics", "Server", "bench_command", "bench", "process_cpu_s", "cpu_model",
           "make_credentials", "security_flags"]

LOCAL_PG = os.path.join(ROOT, "scripts", "local-pg.sh")
# The benchmarks' workload beside the bench's own defaults: 200 accounts, 20 symbols.
BENCH_WORKLOAD = ["--accounts", "200", "--symbols", "20"]


# ---- PostgreSQL -------------------------------------------------------------------------------

def local_pg(action, data_dir, *rest, check=True, show_errors=False):
    """scripts/local-pg.sh ACTION DATA_DIR [REST...]; the last line it printed ("start" prints
    the cluster's URL there), "" if none. Its stderr is shown only with `show_errors`. Unlike
    start_local_pg, it does not ask first whether the cluster was running: for scripts that stop
    what they used either way."""
    done = subprocess.run([LOCAL_PG, action, data_dir, *map(str, rest)], check=check, text=True,
                          stdout=subprocess.PIPE, stderr=None if show_errors else subprocess.PIPE)
    lines = done.stdout.strip().splitlines()
    return lines[-1] if lines else ""


# ---- ports and the admin port -----------------------------------------------------------------

def wait_listening(port, proc=None, seconds=120.0, pause=0.05, ready=None):
    """Waits until 127.0.0.1:`port` accepts a connection and `ready()` (if given: e.g. the admin
    port's /healthz answering) returns without an OSError. True once it does; False if `proc`
    ended first or `seconds` passed, the caller telling which (proc.poll()) in its own words."""
    deadline = time.monotonic() + seconds
    while True:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            if ready:
                ready()
            return True
        except OSError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(pause)


def http_get(port, path, timeout=5.0):
    """(status, body) of GET `path` on 127.0.0.1:`port`, on a connection of its own; raises
    OSError if there is no HTTP reply. Plain sockets rather than urllib: a 503 is an answer
    here, not an exception, and nothing is retried or redirected."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
        chunks = []
        while True:
            data = s.recv(65536)
            if not data:
                break
            chunks.append(data)
    raw = b"".join(chunks)
    head, _, body = raw.partition(b"\r\n\r\n")
    parts = head.split(b" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        raise OSError(f"not an HTTP reply: {raw[:60]!r}")
    return int(parts[1]), body.decode("utf-8", "replace")


def metrics(admin, timeout=5.0):
    """The server's /metrics as {sample: value}, a sample named as printed, labels included
    (`exchange_requests_total{root="create",outcome="ok"}`); lines that are not a number are
    left out. Raises OSError if the admin port does not answer."""
    _, body = http_get(admin, "/metrics", timeout)
    out = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            try:
                out[name] = float(value)
            except ValueError:
                pass
    return out


# ---- the server -------------------------------------------------------------------------------

class Server:
    """One exchange-server (or exchange-floor, which takes the same flags) on 127.0.0.1:`port`
    against the database `db`, with the admin port `admin` if given. Its stdout and stderr go
    to the file `log`, truncated once here and kept open, so that after a restart (start()
    again once the process ended, on the same ports, as an instant supervisor would) the new
    process's lines follow the old one's; with `log=None` they go where the script's own go."""

    def __init__(self, binary, db, port, admin=None, log=os.devnull):
        self.binary, self.db, self.port, self.admin, self.log_path = binary, db, port, admin, log
        self.log_file = None if log is None else open(log, "w")
        self.proc = None

    def start(self, *flags, nice=0, pin=None, new_session=False):
        """Starts the process (under `nice -n NICE` if not 0; pinned to the CPU list `pin` with
        `taskset -c PIN` if given; in a session of its own with `new_session`, so that a Ctrl-C
        reaches only the script, which stops it) and returns it at once: wait_listening()
        waits for it."""
        cmd = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--db", self.db,
               *(["--admin-port", str(self.admin)] if self.admin else []), *flags]
        if pin:
            cmd = ["taskset", "-c", pin, *cmd]
        if nice:
            cmd = ["nice", "-n", str(nice), *cmd]
        self.proc = subprocess.Popen(cmd, stdout=self.log_file,
                                     stderr=None if self.log_file is None else subprocess.STDOUT,
                                     start_new_session=new_session)
        return self.proc

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def wait_listening(self, seconds=120.0, pause=0.05, ready=None):
        """wait_listening() on the trading port, for this process."""
        return wait_listening(self.port, self.proc, seconds, pause, ready)

    def healthz(self, timeout=2.0):
        """(status, body) of the admin port's /healthz; (0, "") if it does not answer."""
        try:
            return http_get(self.admin, "/healthz", timeout)
        except OSError:
            return 0, ""

    def metrics(self, timeout=5.0):
        return metrics(self.admin, timeout)

    def log_tail(self, lines=5):
        """The last lines of the log, joined by " | " (for an error message); "" without one."""
        if self.log_path is None:
            return ""
        try:
            with open(self.log_path, errors="replace") as f:
                return " | ".join(f.read().splitlines()[-lines:])
        except OSError:
            return ""

    def kill(self):
        """SIGKILL, reaped: a crash."""
        self.proc.kill()
        self.proc.wait()

    def stop(self, timeout=30.0):
        """SIGTERM (the server finishes what is in flight), SIGKILL after `timeout`; its exit
        status (None if it was never started)."""
        if self.proc is None:
            return None
        return stop_process(self.proc, timeout, f"exchange-server on port {self.port}")

    def close(self, timeout=30.0):
        """stop(timeout), then closes the log; its exit status."""
        status = self.stop(timeout)
        if self.log_file is not None:
            self.log_file.close()
        return status


# ---- the bench client and /proc ---------------------------------------------------------------

def bench_command(client, port, *flags, workload=BENCH_WORKLOAD, progress=False):
    """The command line of `exchange-client bench` against 127.0.0.1:`port`: without its
    progress line on stderr unless `progress`, with the benchmarks' workload (BENCH_WORKLOAD;
    a script that sets --accounts or --symbols itself passes workload=()), then `flags`."""
    return [client, "bench", "--port", str(port), *([] if progress else ["--no-progress"]), *workload, *flags]


def bench(client, port, *flags):
    """Runs bench_command() to its end, its output discarded (raises CalledProcessError if it
    fails); the first repetition of its JSON report, or None with --setup-only (no report)."""
    command = bench_command(client, port, *flags)
    if "--setup-only" in flags:
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        return None
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run(command + ["--json", out.name], check=True, stdout=subprocess.DEVNULL)
        with open(out.name) as f:
            return json.load(f)["repetitions"][0]


def process_cpu_s(pid):
    """CPU seconds (user + system) a live process has used so far, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / CLK_TCK
