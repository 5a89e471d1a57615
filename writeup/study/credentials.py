"""Certificates, a principals file and an API key for runs with TLS and authentication.

Made at run time with the `openssl` command in a directory the caller owns (and removes), for
scripts/benchmark.py --tls and the study's security experiment alike: a CA, a server
certificate for IP 127.0.0.1, a client certificate whose CN (`bench`) is its principal, and a
principals file giving `bench` both roles on every account with the hash of a random key.
"""
from __future__ import annotations

import hashlib
import os
import secrets
import subprocess

PRINCIPAL = "bench"
FILES = ("ca.pem", "server.pem", "server.key", "client.pem", "client.key", "api-key", "principals")


def openssl(tmp: str, *args: str) -> None:
    """The openssl command in `tmp`, quiet unless it fails (RuntimeError)."""
    r = subprocess.run(["openssl", *args], cwd=tmp, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {r.stderr.strip()}")


def write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def make_credentials(tmp: str) -> dict[str, str]:
    """In `tmp`: a CA, a server certificate for IP 127.0.0.1 and a client certificate with
    CN=bench (EC P-256, valid 2 days), a principals file giving `bench` both roles on every
    account and the sha256 of a random API key, and that key's file. Returns {file: path}."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    openssl(tmp, "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=benchmark CA", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign")
    leaves = [("server", "127.0.0.1", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"),
              ("client", PRINCIPAL, "extendedKeyUsage=clientAuth\n")]  # the client's CN is its principal
    for serial, (who, cn, ext) in enumerate(leaves, start=2):
        write(os.path.join(tmp, f"{who}.ext"), ext)
        openssl(tmp, "req", "-new", *ec, "-keyout", f"{who}.key", "-out", f"{who}.csr", "-subj", f"/CN={cn}")
        openssl(tmp, "x509", "-req", "-in", f"{who}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-set_serial", str(serial), "-days", "2", "-extfile", f"{who}.ext", "-out", f"{who}.pem")
    key = secrets.token_hex(32)
    write(os.path.join(tmp, "api-key"), key + "\n")
    write(os.path.join(tmp, "principals"),
          f"{PRINCIPAL} admin,trade * {hashlib.sha256(key.encode()).hexdigest()}\n")
    return {f: os.path.join(tmp, f) for f in FILES}


def security_flags(creds: dict[str, str], tls_flags: list[str] | None) -> tuple[list[str], list[str]]:
    """(server flags, bench flags) of a leg: plaintext with a key logon when `tls_flags` is None,
    else TLS with the client certificate and `tls_flags`. Both with --principals."""
    server = ["--principals", creds["principals"]]
    if tls_flags is None:
        return server, ["--principal", PRINCIPAL, "--api-key-file", creds["api-key"]]
    return (server + ["--tls-cert", creds["server.pem"], "--tls-key", creds["server.key"],
                      "--tls-client-ca", creds["ca.pem"]],
            ["--tls", "--ca", creds["ca.pem"], "--cert", creds["client.pem"], "--key", creds["client.key"],
             *tls_flags])
