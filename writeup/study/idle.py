"""Idle persistent sessions for the memory experiment (seed 004, figure 9).

The bench client shares sessions between its clients (a pool of connections, as many as are
ever in flight), so it cannot hold N connections open while they idle. This opens N
connections itself, each negotiating the persistent-session extension (docs/PROTOCOL.md
section 8) and sending one small request (a query for an order the account does not have:
parsed, handled and answered, nothing written), and then keeps them open and silent until
closed. Against the thread-per-client model that is N threads, each parked in a blocking read.
"""
from __future__ import annotations

import socket

HELLO = b"EXCHANGE-SESSION 1\n"
REQUEST_XML = (b'<?xml version="1.0" encoding="UTF-8"?>\n'
               b'<transactions id="9999999"><query id="1"/></transactions>\n')


def _read_line(sock: socket.socket, buf: bytearray) -> bytes:
    while b"\n" not in buf:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("server closed the session")
        buf += chunk
    line, _, rest = bytes(buf).partition(b"\n")
    buf[:] = rest
    return line


def _read_exact(sock: socket.socket, buf: bytearray, n: int) -> bytes:
    while len(buf) < n:
        chunk = sock.recv(max(4096, n - len(buf)))
        if not chunk:
            raise ConnectionError("server closed the session")
        buf += chunk
    out = bytes(buf[:n])
    del buf[:n]
    return out


def open_session(port: int, timeout: float = 30.0) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        buf = bytearray()
        s.sendall(HELLO)
        line = _read_line(s, buf)
        if line.strip() != b"EXCHANGE-SESSION 1 OK":
            raise ConnectionError(f"no session: {line[:120]!r}")
        s.sendall(str(len(REQUEST_XML)).encode() + b"\n" + REQUEST_XML)
        n = int(_read_line(s, buf))
        reply = _read_exact(s, buf, n)
        if b"<results" not in reply:
            raise ConnectionError(f"odd reply: {reply[:120]!r}")
        return s
    except BaseException:
        s.close()
        raise


class IdleSessions:
    """N open, idle sessions; close() (or the context manager) ends them."""

    def __init__(self, port: int, n: int):
        self.sockets: list[socket.socket] = []
        try:
            for _ in range(n):
                self.sockets.append(open_session(port))
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        for s in self.sockets:
            try:
                s.close()
            except OSError:
                pass
        self.sockets.clear()

    def __enter__(self) -> "IdleSessions":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
