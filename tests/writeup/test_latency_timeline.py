"""scripts/latency_timeline.py: a tail made by something periodic shows as slow buckets at its
period, and the summary counts the run's slowest 1 % in them."""
import os
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "latency_timeline.py")
HEADER = "rep,index,intended_us,start_us,first_us,end_us,latency_us,first_latency_us,status,ok,items,warmup,agree\n"


def run(path, *args):
    return subprocess.run([sys.executable, SCRIPT, str(path), *args], capture_output=True, text=True)


def write_run(path):
    """2 s of requests every 0.5 ms: 2 ms each, but 20 ms in the first 100 ms of every 500 ms;
    a warm-up request and a failed one that must not count."""
    rows = [HEADER, "1,0,0,0,0,0,900000,900000,ok,1,1,1,\n"]
    for i in range(4000):
        start = 1_000_000 + i * 500
        latency = 20_000 if (start // 1000) % 500 < 100 else 2_000
        rows.append(f"1,{i + 1},{start},{start},{start + latency},{start + latency},{latency},{latency},ok,1,1,0,\n")
    rows.append("1,9999,1500000,1500000,0,0,800000,800000,error,0,1,0,\n")
    path.write_text("".join(rows))


def test_periodic_tail_is_found_in_its_buckets(tmp_path):
    csv_path = tmp_path / "run.csv"
    write_run(csv_path)
    out = run(csv_path, "--rows", "0")
    assert out.returncode == 0, out.stderr
    assert "4,000 requests" in out.stdout  # neither the warm-up nor the failed request
    assert "slow buckets (p99 > 6 ms): 8 of 40 (20 % of the time), 20 % of the requests, 100 % of the slowest 1 %" \
        in out.stdout
    assert "throughput in slow buckets 2,000/s, in the others 2,000/s" in out.stdout


def test_a_file_that_is_not_a_bench_csv_is_refused(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    out = run(bad)
    assert out.returncode != 0
    assert "no answered request" in out.stderr or "cannot read" in out.stderr
    assert run(tmp_path / "missing.csv").returncode != 0
