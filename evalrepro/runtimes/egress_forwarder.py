"""The in-sandbox end of the ``model_only`` path (``evalrepro.runtimes.egress``): run as root
in the agent's sandbox with ``python3 -c SOURCE``, it listens on ``127.0.0.1:PORT`` and
passes each connection to the host proxy's Unix socket. Standard library only: it runs on
the image's Python, where evalrepro is not installed. The host proxy joins its
connections with the same :func:`pump`.
"""

from __future__ import annotations

import os
import socket
import sys
import threading


def pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy ``source`` to ``sink`` until either end closes; then close both ways."""
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(port: int, path: str, ready: str) -> None:
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(64)
    os.close(os.open(ready, os.O_WRONLY | os.O_CREAT, 0o644))
    while True:
        client, _ = server.accept()
        upstream = socket.socket(socket.AF_UNIX)
        try:
            upstream.connect(path)
        except OSError:
            client.close()
            continue
        threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
        threading.Thread(target=pump, args=(upstream, client), daemon=True).start()


if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.argv[2], sys.argv[3])
