"""The scalability study of the exchange server: sweep runner, statistics, plots, report.

Modules: stats (pure statistics, unit-tested in tests/writeup/), machine (git commit and machine
description), procs (server, PostgreSQL and bench processes, CPU accounting), experiments (what
each experiment runs, full and --quick), sweep (the runner, CLI), plots (the figures),
report (report.md from the template and the data), md2pdf (report.md -> report.pdf).
"""
