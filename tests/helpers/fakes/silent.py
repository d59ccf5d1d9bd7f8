"""A server that never answers: a loopback socket that accepts connections and stays silent (time-limit tests)."""

import socket
import threading


class SilentServer:
    """Accepts on ``127.0.0.1`` and never answers; :meth:`close` drops every connection."""

    def __init__(self) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(64)
        self.accepted: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                self.accepted.append(self.socket.accept()[0])
            except OSError:
                return

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.socket.getsockname()[1]}"

    def close(self) -> None:
        for connection in self.accepted:
            connection.close()
        self.socket.close()


def refused_url() -> str:
    """A loopback address nothing listens on: the port was bound, never listened on, and let go, so connections to it
    are refused (time-limit and error-message tests)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"
