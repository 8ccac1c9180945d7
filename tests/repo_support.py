"""Real git repositories, archives and git servers for the repo-source tests.

Servers listen on 127.0.0.1 only: ``git http-backend`` behind a small CGI bridge on
Python's http.server (smart HTTP, protocol v2 or, with ``v2=False``, only v0), and
``git daemon`` (git://). Every request the HTTP server answers is recorded, so a test
can tell whether a materialize went to the network.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tarfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from evalrepro.sample import Sample

#: git for building fixtures: a fixed identity, no user or system config.
_ENV = {
    **{key: value for key, value in os.environ.items() if not key.startswith("GIT_")},
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, env=_ENV, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def make_repo(path: Path, files: dict[str, str] | None = None) -> str:
    """A repo at ``path`` on branch ``main`` with one commit of ``files``; its SHA."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    return commit(path, files or {"README": "hello\n"}, "initial")


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "--all")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def dangling_commit(repo: Path, files: dict[str, str]) -> str:
    """A commit no branch or tag reaches (the branch is put back where it was)."""
    here = git(repo, "rev-parse", "HEAD")
    sha = commit(repo, files, "dangling")
    git(repo, "reset", "-q", "--hard", here)
    return sha


def tar_of(source: Path, dest: Path, arcname: str, mode: str = "w:gz") -> Path:
    with tarfile.open(dest, mode) as archive:
        archive.add(source, arcname=arcname)
    return dest


def sample(instance_id: str, repo: str, base_commit: str) -> Sample:
    return Sample(
        instance_id=instance_id,
        repo=repo,
        base_commit=base_commit,
        test_patch="",
        FAIL_TO_PASS=[],
        PASS_TO_PASS=[],
    )


def commits_in(git_dir: Path) -> set[str]:
    """Every commit a bare repo's refs reach."""
    return set(git(git_dir, "rev-list", "--all").split())


# --- smart HTTP -----------------------------------------------------------------------


@dataclass
class HttpGitServer:
    root: Path
    url: str
    #: (method, path) of every request answered
    requests: list[tuple[str, str]] = field(default_factory=list)


@contextmanager
def http_git_server(root: Path, *, v2: bool = True) -> Iterator[HttpGitServer]:
    """``git http-backend`` serving every repo under ``root`` at http://127.0.0.1:PORT/."""
    state: dict[str, HttpGitServer] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._cgi()

        def do_POST(self) -> None:
            self._cgi()

        def log_message(self, *args: object) -> None:
            pass

        def _cgi(self) -> None:
            path, _, query = self.path.partition("?")
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            env = {
                **_ENV,
                "GIT_PROJECT_ROOT": str(root),
                "GIT_HTTP_EXPORT_ALL": "1",
                "PATH_INFO": path,
                "QUERY_STRING": query,
                "REQUEST_METHOD": self.command,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "REMOTE_ADDR": "127.0.0.1",
            }
            if self.headers.get("Content-Encoding"):
                env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
            # A server that does not pass Git-Protocol on speaks protocol v0 only.
            if v2 and self.headers.get("Git-Protocol"):
                env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
            out = subprocess.run(
                ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
            ).stdout
            head, _, payload = out.partition(b"\r\n\r\n")
            status, headers = 200, []
            for line in head.split(b"\r\n"):
                name, _, value = line.decode().partition(":")
                if name.lower() == "status":
                    status = int(value.split()[0])
                elif name:
                    headers.append((name, value.strip()))
            state["server"].requests.append((self.command, self.path))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state["server"] = HttpGitServer(root, f"http://127.0.0.1:{httpd.server_address[1]}")
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state["server"]
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


# --- git daemon ----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def git_daemon(root: Path) -> Iterator[str]:
    """``git daemon`` serving every repo under ``root``; yields git://127.0.0.1:PORT."""
    port = free_port()
    process = subprocess.Popen(
        [
            "git",
            "daemon",
            "--reuseaddr",
            "--listen=127.0.0.1",
            f"--port={port}",
            f"--base-path={root}",
            "--export-all",
            "--informative-errors",
        ],
        env=_ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("git daemon did not start") from None
                time.sleep(0.05)
        yield f"git://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)
