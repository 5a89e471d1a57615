"""What a result row says about where it came from: the git commit and the machine."""
from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path


# What the study writes (git pathspecs excluding them), not what it measures.
STUDY_OUTPUTS = (":!writeup/results", ":!writeup/figures", ":!writeup/report.md",
                 ":!writeup/report.pdf", ":!docs/PERFORMANCE.md")


def git_commit(repo: Path) -> str:
    """HEAD's hash, with '-dirty' if tracked files differ from it (the lead commits later).
    The study's own outputs do not count: a sweep sets the tracked results aside as it starts,
    which would mark every row of a clean checkout dirty."""
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain",
                                "--untracked-files=no", "--", ".", *STUDY_OUTPUTS],
                               capture_output=True, text=True).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def mem_total_gib() -> float:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return 0.0


def describe() -> dict:
    """nproc, CPU model, kernel, memory: the columns every result row carries."""
    return {
        "nproc": len(os.sched_getaffinity(0)),
        "cpu_model": cpu_model(),
        "kernel": platform.release(),
        "mem_gib": mem_total_gib(),
    }
