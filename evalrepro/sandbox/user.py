"""Running as the test user: the supervisor is the container's root, and nothing of the
patch's or of the code under test's ever runs as root.

The patch tools, pytest's config reader and the writes to ``/testbed`` run as the test
user (who owns ``/testbed`` and can write nothing the supervisor keeps); so do the tests
(``testrun.py``).
"""

from __future__ import annotations

import os
import subprocess

from .protocol import TOOL_TIMEOUT

#: Bytes of a tool's output kept for the log.
_TOOL_OUTPUT = 1 << 20


class User:
    """The unprivileged user the code under test runs as (the program's ``user``)."""

    def __init__(self, spec: dict) -> None:
        self.uid = int(spec["uid"])
        self.gid = int(spec["gid"])
        self.name = str(spec["name"])
        self.home = str(spec["home"])

    def drop(self) -> None:
        os.setgroups([])
        os.setresgid(self.gid, self.gid, self.gid)
        os.setresuid(self.uid, self.uid, self.uid)


def as_user(user: User, function, *args) -> str | None:
    """Run ``function(*args)`` in a child with the test user's ids; its error, if any."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(read_end)
            user.drop()
            os.umask(0o022)
            function(*args)
        except BaseException as error:  # report anything, never raise past the fork
            os.write(write_end, f"{type(error).__name__}: {error}".encode()[:4000])
            code = 1
        finally:
            os._exit(code)
    os.close(write_end)
    message = read_all(read_end, 4096)
    os.waitpid(pid, 0)
    return message.decode("utf-8", "replace") or None


def read_all(fd: int, most: int) -> bytes:
    chunks = []
    total = 0
    with os.fdopen(fd, "rb") as handle:
        while True:
            chunk = handle.read(4096)
            if not chunk:
                break
            if total < most:
                chunks.append(chunk[: most - total])
            total += len(chunk)
    return b"".join(chunks)


def tool_env(user: User) -> dict[str, str]:
    return {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": user.home,
        "USER": user.name,
        "LOGNAME": user.name,
        "LC_ALL": "C.UTF-8",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
    }


def run_as(user: User, argv: list[str], cwd: str, env: dict) -> tuple[int, str]:
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            env=env,
            user=user.uid,
            group=user.gid,
            extra_groups=[],
            umask=0o022,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=TOOL_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as expired:
        output = expired.stdout or b""
        return 124, output[:_TOOL_OUTPUT].decode("utf-8", "replace") + "\n(timed out)"
    return done.returncode, done.stdout[:_TOOL_OUTPUT].decode("utf-8", "replace")
