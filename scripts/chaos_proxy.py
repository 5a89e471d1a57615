"""A TCP relay between an exchange server and one PostgreSQL node that the chaos runner can cut
or make silent (scripts/chaos.py), as tests/support/freezing_proxy does for the C++ tests.

    proxy = Relay(listen_port, target_port); proxy.start()
    proxy.set_mode("silent")   # nothing more is relayed either way; new connections hang
    proxy.set_mode("cut")      # every connection is reset; new ones are closed at once
    proxy.set_mode("pass")     # relays again (connections cut stay cut)

Silent is the worst case for a client: its statements get no answer and no error, so only its
own timeouts (libpq's connect_timeout, the server's --db-timeout-ms) end the wait.
"""
import select
import socket
import threading

MODES = ("pass", "silent", "cut")


class Relay:
    def __init__(self, listen_port, target_port):
        self.listen_port, self.target_port = listen_port, target_port
        self.mode = "pass"
        self._lock = threading.Lock()
        self._pairs = set()  # (client socket, upstream socket) of the live connections
        self._stopping = False
        self._listener = None
        self._thread = None

    def start(self):
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", self.listen_port))
        self._listener.listen(128)
        self._thread = threading.Thread(target=self._accept_loop, daemon=True,
                                        name=f"relay-{self.listen_port}")
        self._thread.start()
        return self

    def set_mode(self, mode):
        assert mode in MODES, mode
        with self._lock:
            self.mode = mode
            doomed = list(self._pairs) if mode == "cut" else []
        for pair in doomed:
            self._close(pair, reset=True)

    def stop(self):
        self._stopping = True
        self.set_mode("cut")
        try:
            self._listener.close()
        except OSError:
            pass

    def _accept_loop(self):
        while not self._stopping:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.mode == "cut":
                self._reset(client)
                continue
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client):
        # Silent: the connection is accepted and then nothing happens, as with a frozen host.
        while self.mode == "silent" and not self._stopping:
            select.select([], [], [], 0.2)
        if self.mode == "cut" or self._stopping:
            self._reset(client)
            return
        try:
            upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
        except OSError:
            self._reset(client)  # the node is down: the client sees its connection refused
            return
        pair = (client, upstream)
        with self._lock:
            if self.mode == "cut":  # cut while connecting: cut this one too
                doomed = True
            else:
                doomed = False
                self._pairs.add(pair)
        if doomed:
            self._close(pair, reset=True)
            return
        self._pump(pair)

    def _pump(self, pair):
        client, upstream = pair
        peer = {client: upstream, upstream: client}
        try:
            while not self._stopping:
                if self.mode == "silent":
                    select.select([], [], [], 0.2)  # hold everything: no reads, no writes
                    continue
                readable, _, _ = select.select([client, upstream], [], [], 0.2)
                for s in readable:
                    data = s.recv(65536)
                    if not data:
                        return
                    peer[s].sendall(data)
        except (OSError, ValueError):  # ValueError: a cut closed the sockets under select
            pass
        finally:
            self._close(pair)

    def _close(self, pair, reset=False):
        with self._lock:
            self._pairs.discard(pair)
        for s in pair:
            if reset:
                self._reset(s)
            else:
                try:
                    s.close()
                except OSError:
                    pass

    @staticmethod
    def _reset(s):
        """Closes with a RST rather than a FIN: what a cut link looks like to the peer."""
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            s.close()
        except OSError:
            pass
