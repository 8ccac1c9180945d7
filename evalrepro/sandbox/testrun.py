"""One run of the test command (or of one test alone): as the test user, under the
watchdog, its output framed into the stream as it comes.

The test process drops to the test user in a user namespace of its own (so the process
cap counts this trial only), with the trial's rlimits, no privilege gain, the seccomp
program that refuses it new user namespaces, and the exit guard's pipe. When the runner
ends, or a limit is crossed, every process but the supervisor is killed in one
``kill(-1)``; its output and the guard's lines are drained, and the run's facts are one
``tests_finished`` event (or, for a fresh run, a result of its own).
"""

from __future__ import annotations

import ctypes
import os
import resource
import select
import signal
import time
from collections.abc import Callable

from .confine import CLONE_NEWUSER, install_seccomp, no_user_namespaces_filter, tests_read_git
from .exitguard import GUARD_FD, GuardRecords
from .infra import TEST_PATH
from .protocol import KIND_OUTPUT, OUTPUT_CHUNK, HarnessError, Stream
from .user import User, read_all
from .watchdog import Watchdog, cgroup_counters, size_text, writable_roots

_PR_SET_PDEATHSIG = 1
_PR_SET_NO_NEW_PRIVS = 38
_TICK = 0.1  # watchdog period, seconds
_DRAIN_SECONDS = 5.0


class TestRun:
    def __init__(
        self,
        program: dict,
        stream: Stream,
        user: User,
        changed: list[str],
        integrity: Callable[[], list[str]] = list,
        *,
        command: str | None = None,
        fresh: bool = False,
    ) -> None:
        """``command``: the test command by default; ``fresh``: a fresh run's (its output
        is counted against the limit, not kept, and the user's site folder is not read:
        the run before could have written to it)."""
        self.integrity = integrity
        self.program = program
        self.command = command or program["test_command"]
        self.fresh = fresh
        self.stream = stream
        self.user = user
        self.limits = program["limits"]
        self.output_bytes = 0
        self.truncated = False
        self.stopped: tuple[str, str] | None = None
        self.status: int | None = None
        self.guard = GuardRecords(set(changed), program["testbed"])
        self.nested = False
        self.guard_fd: int | None = None

    def env(self, guard_inode: int) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("HOME", "USER", "LOGNAME", "PYTHONSAFEPATH")
        }
        env.update(
            PATH=TEST_PATH,
            HOME=self.user.home,
            USER=self.user.name,
            LOGNAME=self.user.name,
            EVALREPRO_GUARD=f"{GUARD_FD}:{guard_inode}:{self.program['testbed']}",
        )
        if self.fresh:
            env["PYTHONNOUSERSITE"] = "1"
        prefix = self.program.get("pycache_prefix")
        if prefix:
            # Every Python process compiles from the verified sources: no cache is read
            # beside them (a planted __pycache__) and none is written (the prefix is
            # root's and empty). The exit guard sets the same for a child whose
            # environment lost these.
            env.update(PYTHONPYCACHEPREFIX=prefix, PYTHONDONTWRITEBYTECODE="1")
        return env

    def launch(self) -> tuple[int, int, int]:
        """Start the test command; (pid, output fd, guard fd)."""
        out_r, out_w = os.pipe()
        guard_r, guard_w = os.pipe()
        ready_r, ready_w = os.pipe()
        go_r, go_w = os.pipe()
        fail_r, fail_w = os.pipe()
        env = self.env(os.fstat(guard_w).st_ino)
        limits = self.limits
        libc = ctypes.CDLL(None, use_errno=True)
        seccomp = (
            None
            if self.program.get("allow_user_namespaces", False)
            else no_user_namespaces_filter(os.uname().machine)
        )
        self.namespaces_blocked = seccomp is not None
        pid = os.fork()
        if pid == 0:  # the test process: nothing here may return
            try:
                for fd in (out_r, guard_r, ready_r, go_w, fail_r):
                    os.close(fd)
                os.setsid()
                with open("/proc/self/oom_score_adj", "w") as handle:
                    handle.write("1000")  # the first the kernel kills, never the supervisor
                nested = (
                    self.program.get("user_namespace", True) and libc.unshare(CLONE_NEWUSER) == 0
                )
                os.write(ready_w, b"u" if nested else b"n")
                os.read(go_r, 1)
                self.user.drop()
                # After the drop: a change of credentials clears the parent-death signal.
                libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
                # In its own user namespace the process cap counts this trial only.
                resource.setrlimit(resource.RLIMIT_NPROC, (limits["pids"], limits["pids"]))
                resource.setrlimit(resource.RLIMIT_DATA, (limits["memory"], limits["memory"]))
                resource.setrlimit(resource.RLIMIT_FSIZE, (limits["disk"], limits["disk"]))
                resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
                libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
                if seccomp is not None:
                    install_seccomp(libc, seccomp)
                os.chdir(self.program["testbed"])
                os.umask(0o022)
                null = os.open("/dev/null", os.O_RDONLY)
                os.dup2(null, 0)
                os.dup2(out_w, 1)
                os.dup2(out_w, 2)
                os.dup2(guard_w, GUARD_FD)
                os.execve("/bin/bash", ["/bin/bash", "-c", self.command], env)
            except BaseException as error:
                try:
                    os.write(fail_w, f"{type(error).__name__}: {error}".encode()[:4000])
                finally:
                    os._exit(127)
        for fd in (out_w, guard_w, ready_w, go_r, fail_w):
            os.close(fd)
        mode = os.read(ready_r, 1)
        os.close(ready_r)
        if mode == b"u":
            # Its root is ours (so /proc shows the watchdog even a process that hides),
            # the test user is itself: nothing else of the container is mapped.
            maps = f"0 0 1\n{self.user.uid} {self.user.uid} 1\n"
            gmaps = f"0 0 1\n{self.user.gid} {self.user.gid} 1\n"
            with open(f"/proc/{pid}/uid_map", "w") as handle:
                handle.write(maps)
            with open(f"/proc/{pid}/gid_map", "w") as handle:
                handle.write(gmaps)
            self.nested = True
        os.write(go_w, b"g")
        os.close(go_w)
        failure = read_all(fail_r, 4096)
        if failure:
            os.waitpid(pid, 0)
            raise HarnessError(f"the test command could not start: {failure.decode()}")
        return pid, out_r, guard_r

    def run(self) -> None:
        self.stream.event("tests_finished", **self.execute())

    def execute(self) -> dict:
        """Run the command to its end (or a limit); the facts of a ``tests_finished``."""
        testbed = self.program["testbed"]
        watchdog = Watchdog(self.user.uid, self.limits, testbed, writable_roots(self.user, testbed))
        counters = cgroup_counters()
        started = time.monotonic()
        pid, out_fd, guard_fd = self.launch()
        self.guard_fd = guard_fd
        if not self.fresh:
            self.stream.event(
                "tests_started",
                user_namespace=self.nested,
                new_user_namespaces="refused" if self.namespaces_blocked else "allowed",
                git="readable" if tests_read_git(self.program) else "hidden",
            )
        deadline = started + self.limits["timeout"]
        poller = select.poll()
        open_fds = {out_fd, guard_fd}
        for fd in open_fds:
            os.set_blocking(fd, False)
            poller.register(fd, select.POLLIN)
        next_tick = started
        while self.status is None and self.stopped is None:
            now = time.monotonic()
            wait = max(0.0, min(next_tick, deadline) - now)
            for fd, _ in poller.poll(int(wait * 1000) + 1):
                if not self._read(fd):
                    poller.unregister(fd)
                    open_fds.discard(fd)
            self._reap(pid)
            now = time.monotonic()
            if self.status is None and now >= deadline:
                self.stopped = ("timeout", f"the tests ran longer than {self.limits['timeout']} s")
            elif self.status is None and now >= next_tick:
                self.stopped = self.stopped or watchdog.check()
                next_tick = now + _TICK
        # The runner is done (or stopped): nothing of the test user may outlive it.
        self._kill_all()
        drain_until = time.monotonic() + _DRAIN_SECONDS
        while open_fds and time.monotonic() < drain_until:
            for fd, _ in poller.poll(100):
                if not self._read(fd):
                    poller.unregister(fd)
                    open_fds.discard(fd)
            self._kill_all()
        while self.status is None:
            self._reap(pid, block=True)
        for fd in (out_fd, guard_fd):
            os.close(fd)
        self._reap(pid)
        if self.stopped is None:
            self.stopped = watchdog.last_count()
        watchdog_peak = dict(watchdog.peak)
        if self.stopped is None:
            # The kernel's own limits (root podman's cgroup) are a backstop: name them.
            after = cgroup_counters()
            if after.get("oom_kill", 0) > counters.get("oom_kill", 0):
                self.stopped = (
                    "memory",
                    "the kernel's out-of-memory killer stopped a test "
                    "process at the container's cgroup limit",
                )
            elif after.get("pids_max", 0) > counters.get("pids_max", 0):
                self.stopped = ("pids", "the container's cgroup refused a fork at its limit")
        exit_code, killed_by = _exit_code(self.status)
        runner = self.guard.runner_exit(pid)
        changed_during_run = self.integrity()
        return dict(
            exit_code=exit_code,
            signal=killed_by,
            seconds=round(time.monotonic() - started, 3),
            output_bytes=self.output_bytes,
            output_truncated=self.truncated,
            stopped=None
            if self.stopped is None
            else {"limit": self.stopped[0], "detail": self.stopped[1]},
            runner_exit=runner[0],
            runner_detail=runner[1],
            replaced=self.guard.findings,
            changed_during_run=changed_during_run,
            peak=watchdog_peak,
        )

    def _read(self, fd: int) -> bool:
        try:
            data = os.read(fd, OUTPUT_CHUNK)
        except BlockingIOError:
            return True
        except OSError:
            return False
        if not data:
            return False
        if fd == self.guard_fd:
            self.guard.feed(data)
            return True
        room = self.limits["output"] - self.output_bytes
        if room <= 0:
            return True
        kept = data[:room]
        self.output_bytes += len(kept)
        if not self.fresh:
            self.stream.frame(KIND_OUTPUT, kept)
        if len(kept) < len(data) or self.output_bytes >= self.limits["output"]:
            self.truncated = True
            self.stopped = self.stopped or (
                "output",
                f"the tests printed more than {size_text(self.limits['output'])}",
            )
        return True

    def _reap(self, main: int, block: bool = False) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
            except ChildProcessError:
                if self.status is None:
                    self.status = 0
                return
            if pid == 0:
                return
            if pid == main:
                self.status = status
                if block:
                    return

    def _kill_all(self) -> None:
        # kill(-1) from the container's root: every process but init and this one, in
        # one pass under the kernel's task lock (a fork bomb cannot outrun it).
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _exit_code(status: int | None) -> tuple[int | None, int | None]:
    if status is None:
        return None, None
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status), os.WTERMSIG(status)
    return os.WEXITSTATUS(status), None
