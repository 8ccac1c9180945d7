"""The ``model_only`` network policy: an agent's sandbox reaches exactly the endpoints its
target names, and nothing else, through a path evalrepro controls.

The sandbox keeps ``--network none`` (a loopback device, no route anywhere). What it gets
instead is one folder, mounted read-only, holding one Unix socket: the host end of an
HTTP proxy that runs here, in the process that runs the attempt (:class:`EgressProxy`).
Inside, a forwarder started as root before the agent (:data:`FORWARDER`; the agent's user
cannot stop it) listens on ``127.0.0.1:PROXY_PORT`` and passes each connection to that
socket; the agent's commands have ``HTTP_PROXY`` / ``HTTPS_PROXY`` pointing at it.

The allow-list is enforced here, on the host, where nothing of the agent's runs: a
connection's first request must be ``CONNECT host:port`` (HTTPS) or an absolute-form
request ``METHOD http://host:port/...`` (HTTP) for a (host, port) the target names;
anything else is answered 403 and closed. An allowed connection is then joined to that
one upstream address for its whole life (later requests on it reach the same endpoint,
whatever they say). Names are compared as written in the config (no DNS lookup is asked
of the agent's input). The headers of the first request are read within a bound.
"""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path
from urllib.parse import urlsplit

from evalrepro.runtimes import egress_forwarder
from evalrepro.runtimes.egress_forwarder import pump

#: Where the proxy's folder is mounted in the sandbox, and the port of the forwarder.
MOUNT = "/run/evalrepro-egress"
SOCKET_NAME = "proxy.sock"
PROXY_PORT = 3128
#: Bytes of a connection's first request head read at most.
_MAX_HEAD = 16 << 10
#: Seconds a client may take to send its first request head.
_HEAD_SECONDS = 30

#: The in-sandbox forwarder's source (``evalrepro.runtimes.egress_forwarder``), run with
#: ``python3 -c`` from ``$EVALREPRO_FORWARDER``.
FORWARDER = Path(egress_forwarder.__file__).read_text()

#: Run as root in the sandbox: start the forwarder, detached, and wait until it listens.
START_FORWARDER = f"""
set -eu
mkdir -p /tmp/evalrepro
command -v python3 >/dev/null || {{ echo "model_only needs python3 in the image"; exit 3; }}
setsid nohup python3 -c "$EVALREPRO_FORWARDER" {PROXY_PORT} {MOUNT}/{SOCKET_NAME} \\
  /tmp/evalrepro/egress.ready >/dev/null 2>&1 < /dev/null &
for _ in $(seq 100); do [ -e /tmp/evalrepro/egress.ready ] && exit 0; sleep 0.1; done
echo "the forwarder did not start"; exit 3
"""

#: The environment of every command of an agent whose network is ``model_only``.
PROXY_ENV = {
    name: f"http://127.0.0.1:{PROXY_PORT}"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
} | {"NO_PROXY": "", "no_proxy": ""}


def allowed_addresses(endpoints: list[str]) -> set[tuple[str, int]]:
    """The (host, port) of each endpoint URL (the scheme's port when none is given)."""
    found = set()
    for url in endpoints:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        found.add((parts.hostname.lower(), parts.port or (443 if parts.scheme == "https" else 80)))
    return found


class EgressProxy:
    """The host end: an HTTP proxy on a Unix socket in ``folder`` that connects only to
    ``allowed`` (host, port) pairs; ``with`` starts and stops it."""

    def __init__(self, folder: Path, allowed: set[tuple[str, int]]) -> None:
        self.folder = folder
        self.allowed = allowed
        self.refused: list[str] = []
        self._server = socket.socket(socket.AF_UNIX)
        path = folder / SOCKET_NAME
        self._server.bind(str(path))
        # The sandbox's users connect through a read-only mount (connecting needs write
        # permission on the socket, which a read-only mount does not take away).
        os.chmod(path, 0o666)
        os.chmod(folder, 0o755)
        self._server.listen(64)
        self._closing = False
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> EgressProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing = True
        try:
            self._server.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._server.close()
        self._thread.join(timeout=5)

    def _serve(self) -> None:
        while not self._closing:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(client,), daemon=True).start()

    def _handle(self, client: socket.socket) -> None:
        upstream = None
        try:
            client.settimeout(_HEAD_SECONDS)
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = client.recv(4096)
                if not chunk:
                    return
                head += chunk
                if len(head) > _MAX_HEAD:
                    return self._refuse(client, "a request head over the bound")
            line = head.split(b"\r\n", 1)[0].decode("latin-1")
            target, forward = self._target(line, head)
            if target is None:
                return self._refuse(client, line[:200])
            upstream = socket.create_connection(target, timeout=30)
            upstream.settimeout(None)
            client.settimeout(None)
            if forward is None:
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                early = head.split(b"\r\n\r\n", 1)[1]  # a client that did not wait
                if early:
                    upstream.sendall(early)
            else:
                upstream.sendall(forward)
            threading.Thread(target=pump, args=(upstream, client), daemon=True).start()
            pump(client, upstream)
        except OSError:
            pass
        finally:
            client.close()
            if upstream is not None:
                upstream.close()

    def _target(self, line: str, head: bytes) -> tuple[tuple[str, int] | None, bytes | None]:
        """Where the first request goes, if allowed, and what to send there first (None
        for a CONNECT: the tunnel's bytes are the client's)."""
        parts = line.split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            return None, None
        method, where, version = parts
        if method == "CONNECT":
            host, _, port = where.rpartition(":")
            address = (host.strip("[]").lower(), int(port)) if port.isdigit() else None
            if address in self.allowed:
                return address, None
            return None, None
        url = urlsplit(where)
        if url.scheme != "http" or not url.hostname:
            return None, None
        try:
            address = (url.hostname.lower(), url.port or 80)
        except ValueError:
            return None, None
        if address not in self.allowed:
            return None, None
        path = url.path or "/"
        if url.query:
            path += "?" + url.query
        rest = head.split(b"\r\n", 1)[1]
        return address, f"{method} {path} {version}\r\n".encode("latin-1") + rest

    def _refuse(self, client: socket.socket, what: str) -> None:
        self.refused.append(what)
        try:
            client.sendall(
                b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )
        except OSError:
            pass


_FORBIDDEN = b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
