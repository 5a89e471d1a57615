"""The exchange's wire protocol from the scripts: one request on a connection of its own.

Imported by scripts/soak.py and scripts/takeover_bench.py (run from scripts/, which Python puts
first on sys.path).
"""
import socket


def request(port, xml, timeout=30):
    """One request on its own connection to 127.0.0.1:port. Returns the reply, or raises
    ConnectionRefusedError (nothing was delivered) or another OSError (sent, no reply: the
    outcome is unknown)."""
    data = xml.encode()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(str(len(data)).encode() + b"\n" + data)
        s.shutdown(socket.SHUT_WR)
        chunks = []
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return b"".join(chunks).decode()
            chunks.append(chunk)
