"""scripts/benchmark.py --tls without a server: the certificates and principals file it makes,
the flags of each leg, the order of the legs round by round, and the judging on medians."""
import hashlib
import importlib.util
import os
import shutil
import subprocess

import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "benchmark.py")
spec = importlib.util.spec_from_file_location("benchmark", SCRIPT)
benchmark = importlib.util.module_from_spec(spec)
spec.loader.exec_module(benchmark)


def openssl(*args):
    return subprocess.run(["openssl", *args], capture_output=True, text=True, check=True).stdout


@pytest.mark.skipif(not shutil.which("openssl"), reason="no openssl command")
def test_credentials_chain_to_the_ca_and_name_the_principal(tmp_path):
    creds = benchmark.make_credentials(str(tmp_path))
    ca = creds["ca.pem"]
    openssl("verify", "-CAfile", ca, "-purpose", "sslserver", creds["server.pem"])
    openssl("verify", "-CAfile", ca, "-purpose", "sslclient", creds["client.pem"])
    server = openssl("x509", "-in", creds["server.pem"], "-noout", "-text")
    assert "IP Address:127.0.0.1" in server and "prime256v1" in server
    assert "CN = bench" in openssl("x509", "-in", creds["client.pem"], "-noout", "-subject")
    key = open(creds["api-key"]).read().splitlines()[0]
    assert open(creds["principals"]).read() == f"bench admin,trade * {hashlib.sha256(key.encode()).hexdigest()}\n"


def test_both_legs_authenticate_and_only_tls_legs_present_a_certificate():
    creds = {f: f"/t/{f}" for f in ("ca.pem", "server.pem", "server.key", "client.pem", "client.key", "api-key",
                                    "principals")}
    server, bench = benchmark.security_flags(creds, None)
    assert server == ["--principals", "/t/principals"] and "--api-key-file" in bench and "--tls" not in bench
    server, bench = benchmark.security_flags(creds, ["--tls-resume", "off"])
    assert server[:2] == ["--principals", "/t/principals"] and "--tls-client-ca" in server
    assert bench[-2:] == ["--tls-resume", "off"] and "--cert" in bench and "--principal" not in bench


class FakeSplit:
    orders, cpu = 1000, {"server": 0.01, "postgres": 0.02, "client": 0.005}

    def line(self):
        return "    cpu: ..."


def test_legs_alternate_round_by_round(monkeypatch, capsys):
    order = []
    monkeypatch.setattr(benchmark, "start_server", lambda db, model, extra: extra)
    rates = {"plaintext, key logon": 100.0, "TLS 1.3, resumption on": 60.0,
             "TLS 1.2, resumption on (session ids)": 40.0, "TLS, full handshakes (resumption off)": 20.0}

    def measure(server, seconds, bargs, pg):
        label = ("TLS 1.3, resumption on" if bargs[-1] == "on" else "TLS, full handshakes (resumption off)"
                 if bargs[-1] == "off" else "TLS 1.2, resumption on (session ids)" if bargs[-1] == "1.2"
                 else "plaintext, key logon")
        order.append(label)
        rep = {"throughput_items_ps": rates[label], "latency_ms": {"p50": 1.0, "p99": 2.0}, "error_replies": 0,
               "connection_errors": 0}
        if "--tls" in bargs:
            rep.update(tls_handshakes=10, tls_resumed=0 if bargs[-1] == "off" else 9)
        return rep, FakeSplit()

    monkeypatch.setattr(benchmark, "measure", measure)
    name = "1 order/request, 1 request/connection, 16 clients"
    legs = [benchmark.PLAIN_LEG] + benchmark.TLS_CASES[name]
    args = type("Args", (), {"repeat": 2})()
    creds = {f: f for f in ("ca.pem", "server.pem", "server.key", "client.pem", "client.key", "api-key", "principals")}
    runs = benchmark.tls_rounds(args, 2, "db", None, creds, name, "pool", ["--clients", "16"], legs)
    labels = [leg[0] for leg in legs]
    assert order == labels + labels[::-1]  # plaintext first in odd rounds, TLS first in even ones
    rows = benchmark.tls_table(args, [(name, "pool", legs, runs)])
    # full handshakes: reported, not judged
    assert [(r[2], r[6]) for r in rows] == [("0.60x", True), ("0.40x", False)]
    out = capsys.readouterr().out
    assert "10 (9 resumed)" in out and "none (reported)" in out and "[round 2/2]" in out
