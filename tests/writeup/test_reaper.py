"""procs.Reaper, which scripts/benchmark.py uses to stop everything it started: processes and
other things are stopped newest first on a normal exit, an exception and SIGTERM."""
import os
import signal
import subprocess

import pytest

from study import procs


def sleeper():
    return subprocess.Popen(["sleep", "60"])


def test_normal_exit_stops_processes_and_calls_newest_first():
    order = []
    with procs.Reaper() as reaper:
        reaper.call(lambda: order.append("pg"), "a cluster")
        p = reaper.process(sleeper(), "sleeper")
        reaper.call(lambda: order.append(p.poll()), "after the sleeper was started")
    assert p.poll() is not None  # stopped
    assert order == [None, "pg"]  # newest first: the sleeper was still running then


def test_stop_forgets_and_exception_still_stops_the_rest():
    with pytest.raises(RuntimeError):
        with procs.Reaper() as reaper:
            a = reaper.process(sleeper(), "a")
            b = reaper.process(sleeper(), "b")
            assert reaper.stop(a) == -signal.SIGTERM
            raise RuntimeError("a case failed")
    assert b.returncode == -signal.SIGTERM


def test_sigterm_becomes_systemexit_and_cleans_up():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as exit_info:
        with procs.Reaper() as reaper:
            p = reaper.process(sleeper(), "sleeper")
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):  # Python runs the handler between bytecodes
                pass
            pytest.fail("SIGTERM did not end the block")
    assert exit_info.value.code == 128 + signal.SIGTERM
    assert p.poll() is not None
    assert signal.getsignal(signal.SIGTERM) == before  # restored


def test_a_failing_cleanup_does_not_stop_the_others():
    called = []
    with procs.Reaper() as reaper:
        reaper.call(lambda: called.append("first"), "first")
        reaper.call(lambda: 1 / 0, "broken")
    assert called == ["first"]
