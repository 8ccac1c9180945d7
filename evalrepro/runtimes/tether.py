"""Run a long build command (``podman build``, ``mmdebstrap``) so that it cannot outlive
evalrepro.

Killing evalrepro with SIGKILL leaves its children running, and killing ``podman
build`` leaves the processes of its ``RUN`` step running (they are orphaned, not
killed). So each such command runs under a small *keeper* (this file, run as a script
with the same Python): a child subreaper that starts the command in a session of its
own and watches a pipe whose other end only evalrepro holds. When the command ends, the
keeper kills whatever of it was left behind (orphans come to the keeper, being a
subreaper); when evalrepro dies (the pipe closes), it stops the command (SIGTERM, so
that mmdebstrap and podman clean up, then SIGKILL) and everything it started.

Standard library only in the keeper part: it runs as ``python -I tether.py FD -- ARGV``.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

_PR_SET_CHILD_SUBREAPER = 36
#: Seconds between SIGTERM and SIGKILL when evalrepro died under a running command.
GRACE_SECONDS = 10.0
#: podman's per-user pause process holds the rootless user namespace for every podman
#: command of the user: it is not the build's, whoever happens to have started it.
_NOT_OURS = (b"catatonit\x00-P",)


#: The pipes' write ends of the commands running now (several builds at once run from
#: threads), by a token of each call: an fd number can be reused once it is closed.
_running: dict[object, int] = {}
_running_lock = threading.Lock()


def _release(token: object) -> None:
    with _running_lock:
        fd = _running.pop(token, None)
        if fd is not None:
            os.close(fd)


def stop_all() -> None:
    """Stop every tethered command of this process now, as if evalrepro had died (their
    keepers see their pipes close): an interrupt must not wait for builds that other
    threads are waiting on."""
    with _running_lock:
        for fd in _running.values():
            os.close(fd)
        _running.clear()


def run_tethered(argv: list[str], *, stdout, env: dict[str, str], cwd: str | None = None) -> int:
    """Run ``argv`` (stdout and stderr to ``stdout``) under a keeper, in ``cwd`` (None:
    this process's); its exit code."""
    read_end, write_end = os.pipe()
    token = object()
    with _running_lock:
        _running[token] = write_end
    try:
        keeper = subprocess.Popen(
            [sys.executable, "-I", str(Path(__file__).resolve()), str(read_end), "--", *argv],
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            pass_fds=(read_end,),
            # Not in evalrepro's process group: a signal to the group (Ctrl-C) stops
            # evalrepro, whose exit then stops the command through the pipe.
            start_new_session=True,
        )
    except BaseException:
        _release(token)
        raise
    finally:
        os.close(read_end)
    try:
        return keeper.wait()
    finally:
        _release(token)  # the keeper sees the pipe close only when nobody holds it


# --- the keeper --------------------------------------------------------------------------


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                command = handle.read()
        except OSError:
            continue
        if command.startswith(_NOT_OURS):
            continue
        children.setdefault(int(fields[1]), []).append(int(name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _kill_all(root: int, sig: int) -> int:
    victims = _descendants(root)
    for pid in victims:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    return len(victims)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def keep(control_fd: int, argv: list[str]) -> int:
    ctypes.CDLL(None).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    me = os.getpid()
    child = subprocess.Popen(argv, start_new_session=True)
    poller = select.poll()
    poller.register(control_fd, select.POLLIN | select.POLLHUP)
    orphaned = False
    while child.poll() is None:
        if poller.poll(200):
            orphaned = True  # evalrepro is gone: the pipe's last writer closed it
            break
    if orphaned:
        try:
            os.killpg(child.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + GRACE_SECONDS
        while child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
    # Whatever is left (the whole tree if orphaned; a RUN step's strays otherwise).
    for _ in range(50):
        _reap()
        if not _kill_all(me, signal.SIGKILL):
            break
        time.sleep(0.05)
    _reap()
    if orphaned:
        return 137
    code = child.returncode or 0
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    fd, separator, *command = sys.argv[1:]
    assert separator == "--"
    sys.exit(keep(int(fd), command))
