"""The exit guard, from the supervisor's side: putting it into the image's site folders,
and reading what it reports.

The guard (``guard.py``) runs inside every Python process of the tests and writes a line
to a pipe of the supervisor's when one starts and when one exits normally (with the
framework functions that code of the patch replaced). Its records are evidence only for a
*failure*: they are written by the process under test, so they can never make a trial
pass.
"""

from __future__ import annotations

import json
import os

from .protocol import shown
from .tree import remove

#: The fd number of the exit guard's pipe in the test processes (high: rarely reused).
GUARD_FD = 1017
GUARD_MODULE = "_evalrepro_guard"
#: Sorted first among .pth files, so its exit hook is registered first and runs last.
GUARD_PTH = "00-evalrepro-guard.pth"
#: The longest guard line read; the rest of a longer one is dropped.
_GUARD_LINE = 8192


class GuardRecords:
    """The exit guard's lines: which Python processes started, which exited normally.

    Written by code that runs inside the process under test, so they are evidence only
    for a *failure* (a missing exit record, a framework function replaced): they can
    never make a trial pass.
    """

    def __init__(self, changed: set[str] | None = None, testbed: str = "/testbed") -> None:
        self.started: dict[int, int] = {}  # pid -> ppid
        self.exited: set[int] = set()
        self.redirected: set[int] = set()
        self.findings: list[dict] = []
        #: Only replacements by code in files the patch changed count (the repo's own
        #: conftest may patch a framework on purpose).
        self.changed = changed
        self.testbed = testbed.rstrip("/") + "/"
        self._partial = b""
        self._discarding = False  # inside a line that grew past _GUARD_LINE

    def feed(self, data: bytes) -> None:
        lines = data.split(b"\n")
        last = lines.pop()
        for line in lines:
            if self._discarding:
                self._discarding = False  # the rest of an overlong line: dropped
                self._partial = b""
                continue
            line = self._partial + line
            self._partial = b""
            if len(line) <= _GUARD_LINE:
                self._line(line)
        if self._discarding:
            return
        self._partial += last
        if len(self._partial) > _GUARD_LINE:
            self._partial, self._discarding = b"", True

    def _line(self, line: bytes) -> None:
        kind, _, rest = line.partition(b" ")
        try:
            if kind == b"S" and len(self.started) < 100_000:
                pid, ppid = rest.split()[:2]
                self.started.setdefault(int(pid), int(ppid))
            elif kind == b"X":
                pid, _, payload = rest.partition(b" ")
                self.exited.add(int(pid))
                facts = json.loads(payload) if payload.startswith(b"{") else {}
                if not isinstance(facts, dict):
                    return
                if facts.get("redirected") is True:
                    self.redirected.add(int(pid))
                replaced = facts.get("replaced")
                for item in replaced[:20] if isinstance(replaced, list) else []:
                    if isinstance(item, dict) and len(self.findings) < 50:
                        self._finding(str(item.get("target"))[:300], str(item.get("file")))
        except (ValueError, AttributeError, TypeError, RecursionError):
            pass  # malformed: guard lines are untrusted

    def _finding(self, target: str, file: str) -> None:
        relative = file[len(self.testbed) :] if file.startswith(self.testbed) else None
        if relative is None or (self.changed is not None and relative not in self.changed):
            return
        finding = {"target": target, "file": shown(relative)[:500]}
        if finding not in self.findings:
            self.findings.append(finding)

    def runner_exit(self, main: int) -> tuple[str, str]:
        """clean / abnormal / unknown for the test command's Python runner processes."""
        runners = [pid for pid in self.started if pid == main]
        if not runners:
            runners = [pid for pid, ppid in self.started.items() if ppid == main]
        if not runners:
            return "unknown", "no Python runner reported to the exit guard"
        missing = [pid for pid in runners if pid not in self.exited]
        if missing:
            return "abnormal", (
                f"the test runner (pid {missing[0]}) ended without Python's normal "
                "shutdown (os._exit or a fatal signal)"
            )
        redirected = [pid for pid in runners if pid in self.redirected]
        if redirected:
            return "abnormal", (
                f"the test runner (pid {redirected[0]}) ended with its stdout or stderr "
                "sent away from the harness's pipe"
            )
        return "clean", ""


def guard_module(source: str, site_hooks: bool, pycache_prefix: str | None = None) -> bytes:
    """The exit guard as installed: its switches (``_SITE_HOOKS``: the repository's own
    sitecustomize and usercustomize run; ``_PYCACHE_PREFIX``: where every process looks
    for bytecode, None: as usual) as the first lines, then the module's source."""
    with open(source, "rb") as handle:
        return (
            b"_SITE_HOOKS = %s\n" % repr(bool(site_hooks)).encode()
            + b"_PYCACHE_PREFIX = %s\n" % repr(pycache_prefix).encode()
            + handle.read()
        )


def install_guard(
    source: str, testbed: str, site_hooks: bool, pycache_prefix: str | None = None
) -> list[str]:
    """Put the exit guard into every site directory of the image; where it went."""
    import glob

    module = guard_module(source, site_hooks, pycache_prefix)
    places = []
    candidates = sorted(glob.glob("/opt/venv/lib/python3*/site-packages"))
    candidates += [p for p in ("/usr/lib/python3/dist-packages",) if os.path.isdir(p)]
    for site in candidates:
        if os.path.realpath(site).startswith(os.path.realpath(testbed) + "/"):
            continue
        for name, data in (
            (GUARD_MODULE + ".py", module),
            (GUARD_PTH, f"import {GUARD_MODULE}\n".encode()),
        ):
            path = os.path.join(site, name)
            remove(path)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
        places.append(site)
    return places
