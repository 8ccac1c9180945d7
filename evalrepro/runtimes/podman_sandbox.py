"""The interactive sandbox of the podman runtime (see :mod:`evalrepro.runtimes.interactive`).

One detached container per sandbox, started from the image's Id (a tag moved meanwhile
cannot swap the image), ``--network none``, the environment's limits, no volume (but, for
``model_only``, the egress proxy's folder, read-only), no privilege gain, and a lifetime
after which conmon kills it even if evalrepro died. Each command is a ``podman exec``;
every byte that comes back is read by this process within a bound and a deadline of its
own: whatever runs inside is the agent's (it may replace ``bash``, ``timeout`` or ``cat``
in the container), so no bound relies on a program in the container. A tree comes out
through ``podman cp``, which podman itself reads from the container's filesystem, after
:meth:`PodmanSandbox.end` (``podman stop --time 0``: PID 1 is killed, and the kernel kills
every other process of the PID namespace, ``exec``'d or detached, before PID 1's end is
reported): nothing is still writing while it is read.

The process limit is the kernel's in both modes, and the same number. Commands of the
sandbox's user run in a user namespace of the sandbox's own, nested in the container's
and made at its start by its root (a process of root's holds it; the map gives root and
that user themselves, nothing else): each ``podman exec`` enters it as root and only
then becomes the user (``nsenter --setuid``) under an ``nproc`` ulimit of ``pids``
(``prlimit``), which the kernel counts per user *and user namespace*: this sandbox's
processes only, whatever else the host user runs (podman's ``--pids-limit`` is ignored
rootless on cgroup v1; ``--userns=auto`` gives a namespace too, but costs a chowned copy
of the image per range of ids and leaves room for few sandboxes). Root mode keeps the
cgroup (``--pids-limit``, with headroom) as a backstop. The harness's watcher
(``agent_phase``) stops the sandbox when it counts the limit reached. An image without
the programs this needs (``unshare``, ``nsenter``, ``prlimit``) gets no kernel cap:
:attr:`PodmanSandbox.capped` says so and the watcher is the only stop.

``/etc/hosts`` and ``/etc/resolv.conf`` are the harness's own files (``localhost`` and
the sandbox's fixed host name; no name server), mounted read-only: podman's would hold
the host's names and address and its resolver.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from pathlib import Path
from typing import Any, Protocol

from evalrepro.runtimes.egress import MOUNT as EGRESS_MOUNT
from evalrepro.runtimes.interactive import (
    ExecResult,
    Sandbox,
    SandboxError,
    SandboxRequest,
    TooLarge,
)


class PodmanRuntime(Protocol):
    """What a sandbox uses of the podman runtime that opens it."""

    #: The program (``podman``, or ``docker``, whose CLI takes the same commands here).
    tool: str
    env: dict[str, str]
    _running: set[str]
    files: Path
    config: Any

    def image_id(self, tag: str) -> str | None: ...

    def _remove(self, name: str) -> None: ...

    def backstop(self, seconds: int) -> list[str]: ...

    def _limit_flags(self) -> tuple[list[str], dict[str, str]]: ...


#: Seconds a command may run past its timeout before the host stops waiting for it.
_GRACE = 5.0
#: Seconds podman itself may take to answer (start, copy, remove).
_PODMAN_SECONDS = 120.0
#: The sandbox's host name (podman's default, the container's id, is not in its hosts).
HOSTNAME = "sandbox"
#: Run as root at the sandbox's start, the user's name on stdin: a process of root's that
#: holds a new user namespace whose map is root and that user themselves (written in one
#: write each, as the kernel wants), then one line: its pid, the user's uid, gid and home,
#: and where nsenter and prlimit are (root's own, found on root's PATH).
_JAIL = r"""
set -eu
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
read -r name
nsenter=$(command -v nsenter); prlimit=$(command -v prlimit); command -v unshare >/dev/null
entry=$(getent passwd "$name")
uid=$(echo "$entry" | cut -d: -f3); gid=$(echo "$entry" | cut -d: -f4)
home=$(echo "$entry" | cut -d: -f6)
[ -n "$uid" ] && [ "$uid" != 0 ]
setsid unshare --user sleep infinity </dev/null >/dev/null 2>&1 &
holder=$!
# Until the holder is in its new namespace: bounded by time, not by a count of tries (a
# loaded machine makes each try slow), and compared by the test builtin (-ef: the same
# namespace), not by a process per try.
deadline=$((SECONDS + 45))
while [ /proc/$holder/ns/user -ef /proc/self/ns/user ]; do
  [ "$SECONDS" -lt "$deadline" ]; sleep 0.01
done
# Each map in one write, as the kernel takes only one: dd gathers its whole input first
# (printf's line-buffered output comes a line per write, which cat would pass on as is).
map() { printf '0 0 1\n%s %s 1\n' "$2" "$2" \
  | dd of="/proc/$holder/$1" bs=4096 count=1 iflag=fullblock conv=notrunc status=none; }
map uid_map "$uid"
map gid_map "$gid"
printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$holder" "$uid" "$gid" "$home" "$nsenter" "$prlimit"
"""


class PodmanSandbox(Sandbox):
    def __init__(self, runtime: PodmanRuntime, request: SandboxRequest) -> None:
        self.runtime = runtime
        self.request = request
        self._stopped = False
        _check_image(runtime, request, f"cannot start sandbox {request.name}")
        flags, _ = runtime._limit_flags()
        if request.network == "model_only":
            if not request.egress:
                raise SandboxError(f"sandbox {request.name}: model_only needs an egress proxy")
            # No network still: the proxy's socket is the only way out (runtimes/egress.py).
            flags = [*flags, f"--volume={request.egress}:{EGRESS_MOUNT}:ro"]
        command = [
            "run",
            "--detach",
            "--name",
            request.name,
            "--network",
            "none",
            "--init",
            "--pull",
            "never",
            "--log-driver",
            "none",
            "--security-opt",
            "no-new-privileges",
            f"--hostname={HOSTNAME}",
            f"--volume={runtime.files / 'sandbox-hosts'}:/etc/hosts:ro",
            f"--volume={runtime.files / 'sandbox-resolv.conf'}:/etc/resolv.conf:ro",
            *runtime.backstop(request.lifetime),
            "--workdir",
            request.workdir,
            *(f"--env={key}={value}" for key, value in sorted(request.env.items())),
            *flags,
            "--entrypoint",
            "sleep",
            request.image_digest,
            "infinity",
        ]
        runtime._running.add(request.name)
        done = _bounded([runtime.tool, *command], runtime.env, b"", 1 << 16, _PODMAN_SECONDS)
        if done.exit_code != 0:
            self.stop()
            raise SandboxError(f"cannot start sandbox {request.name}: {_last(done.output)}")
        self._ended = False
        self._pid_namespace = self._namespace()
        self._jail: list[str] | None = None
        self._home = ""
        #: Whether the kernel caps the processes of the sandbox's user at ``pids``, and
        #: if not, why (what the namespace's making said).
        self.capped = False
        self.uncapped_reason = "the agent runs as root"
        if request.user not in (None, "root", "0"):
            self._open_jail(runtime.config.limits.pids)

    def _open_jail(self, pids: int) -> None:
        """Make the user namespace the user's commands run in, held by a process of root's
        (see the module docstring); without it (an image that lacks a program this
        needs) commands run as before, uncapped."""
        done = self.exec(
            _JAIL, timeout=90, user="root", cwd="/", stdin=f"{self.request.user}\n".encode()
        )
        lines = done.output.strip().splitlines() if done.exit_code == 0 else []
        fields = lines[-1].split("\t") if lines else []
        if len(fields) != 6 or not fields[0].isdigit() or not all(fields):
            said = _last(done.output) or "no output"
            ended = "timed out" if done.timed_out else f"exit {done.exit_code}"
            self.uncapped_reason = f"no user namespace for the agent's user ({ended}: {said})"
            return
        holder, uid, gid, self._home, nsenter, prlimit = fields
        self._jail = [
            nsenter,
            "--user",
            f"--target={holder}",
            f"--setuid={uid}",
            f"--setgid={gid}",
            "--",
            prlimit,
            f"--nproc={pids}:{pids}",
            "--",
        ]
        self.capped = True

    def _namespace(self) -> str | None:
        argv = [self.runtime.tool, "inspect", "--format", "{{.State.Pid}}", self.request.name]
        done = _bounded(argv, self.runtime.env, b"", 1 << 10, _PODMAN_SECONDS)
        try:
            return os.readlink(f"/proc/{int(done.output.strip())}/ns/pid")
        except (ValueError, OSError):
            return None

    def processes(self) -> int | None:
        """How many processes run in the sandbox now, counted by the host from ``/proc``
        (every process in the container's PID namespace: ``exec``'d commands too, however
        they were started); None: not known here."""
        if self._ended:
            return 0
        if self._pid_namespace is None:
            return None
        count = 0
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                try:
                    count += os.readlink(f"/proc/{entry.name}/ns/pid") == self._pid_namespace
                except OSError:
                    continue  # gone meanwhile, or not ours to read
        return count

    def exec(
        self,
        command: str,
        *,
        timeout: float,
        output_limit: int = 1 << 20,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        stdin: bytes = b"",
        user: str | None = None,
    ) -> ExecResult:
        argv = [
            self.runtime.tool,
            "exec",
            "--interactive",
            "--workdir",
            cwd or self.request.workdir,
        ]
        jail: list[str] = []
        if self._jail is not None and (user is None or user == self.request.user):
            # As root into the sandbox's user namespace, then the user, capped.
            jail = self._jail
            argv += ["--user", "root", f"--env=HOME={self._home}"]
        elif (user or self.request.user) is not None:
            argv += ["--user", user or self.request.user or ""]
        # By name only: podman takes each value from its own environment, so that no
        # value (a key) shows in the host's process list.
        for key in sorted(env or {}):
            argv += ["--env", key]
        # The in-container timeout kills the command's process group; the host's own
        # deadline holds even if the container's `timeout` is not coreutils' any more.
        argv += [
            self.request.name,
            *jail,
            "timeout",
            "--signal=KILL",
            f"{timeout:g}",
            "bash",
            "-c",
            command,
        ]
        started = time.monotonic()
        done = _bounded(
            argv, {**self.runtime.env, **(env or {})}, stdin, output_limit, timeout + _GRACE
        )
        seconds = round(time.monotonic() - started, 3)
        timed_out = done.killed or (done.exit_code in (124, 137) and seconds >= timeout - 0.05)
        return ExecResult(
            exit_code=None if timed_out else done.exit_code,
            output=done.output,
            dropped=done.dropped,
            timed_out=timed_out,
            seconds=seconds,
        )

    def read_file(self, path: str, *, limit: int = 1 << 20) -> bytes:
        argv = [self.runtime.tool, "exec", self.request.name, "cat", "--", path]
        done = _bounded(argv, self.runtime.env, b"", limit + 1, _PODMAN_SECONDS, raw=True)
        if done.exit_code != 0:
            raise SandboxError(f"cannot read {path} in sandbox {self.request.name}")
        if done.dropped or len(done.data) > limit:
            raise TooLarge(f"{path} in sandbox {self.request.name} is over {limit} bytes")
        return done.data

    def write_file(self, path: str, data: bytes) -> None:
        script = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"'
        argv = [self.runtime.tool, "exec", "--interactive", self.request.name, "sh", "-c", script]
        done = _bounded([*argv, "sh", path], self.runtime.env, data, 1 << 16, _PODMAN_SECONDS)
        if done.exit_code != 0:
            raise SandboxError(
                f"cannot write {path} in sandbox {self.request.name}: {_last(done.output)}"
            )

    def export_tree(self, path: str, *, limit: int) -> bytes:
        argv = [self.runtime.tool, "cp", f"{self.request.name}:{path}", "-"]
        done = _bounded(argv, self.runtime.env, b"", limit + 1, _PODMAN_SECONDS, raw=True)
        if done.dropped or len(done.data) > limit:
            raise TooLarge(f"{path} in sandbox {self.request.name} is over {limit} bytes as a tar")
        if done.exit_code != 0:
            raise SandboxError(f"cannot copy {path} out of sandbox {self.request.name}")
        return done.data

    def end(self) -> int:
        running = self.processes() or 0
        output = ""
        # Stopped means PID 1 has ended, and with it (the kernel waits for them) every
        # process of the namespace; podman is asked for the state rather than trusted by
        # the stop's exit status (a second stop for a sandbox podman was slow to stop).
        for _ in range(2):
            argv = [self.runtime.tool, "stop", "--time", "0", self.request.name]
            output = _bounded(argv, self.runtime.env, b"", 1 << 16, _PODMAN_SECONDS).output
            argv = [
                self.runtime.tool,
                "inspect",
                "--format",
                "{{.State.Status}}",
                self.request.name,
            ]
            state = _bounded(argv, self.runtime.env, b"", 1 << 10, _PODMAN_SECONDS)
            if state.exit_code == 0 and state.output.strip() in ("exited", "stopped"):
                self._ended = True
                return running
        raise SandboxError(
            f"cannot stop the processes of sandbox {self.request.name}: {_last(output)}"
        )

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self.runtime._remove(self.request.name)
        self.runtime._running.discard(self.request.name)


def image_tree(runtime: PodmanRuntime, request: SandboxRequest, path: str, *, limit: int) -> bytes:
    """The folder ``path`` of the request's image as a tar stream: copied out of a
    container that is created and never started (no process ran in it), then removed."""
    _check_image(runtime, request, f"cannot copy {path} out of {request.image_tag}")
    name = request.name
    runtime._running.add(name)
    try:
        created = _bounded(
            [runtime.tool, "create", "--name", name, "--pull", "never", request.image_digest],
            runtime.env,
            b"",
            1 << 16,
            _PODMAN_SECONDS,
        )
        if created.exit_code != 0:
            raise SandboxError(f"cannot create {name}: {_last(created.output)}")
        argv = [runtime.tool, "cp", f"{name}:{path}", "-"]
        done = _bounded(argv, runtime.env, b"", limit + 1, _PODMAN_SECONDS, raw=True)
        if done.dropped or len(done.data) > limit:
            raise SandboxError(f"{path} of {request.image_tag} is over {limit} bytes as a tar")
        if done.exit_code != 0:
            raise SandboxError(f"cannot copy {path} out of {request.image_tag}")
        return done.data
    finally:
        runtime._remove(name)
        runtime._running.discard(name)


def _check_image(runtime: PodmanRuntime, request: SandboxRequest, doing: str) -> None:
    found = runtime.image_id(request.image_digest)
    if found is not None and not found.startswith("sha256:"):
        found = f"sha256:{found}"
    if found != request.image_digest:
        raise SandboxError(
            f"{doing}: the store holds no image {request.image_digest} ({request.image_tag})"
        )


class _Done(ExecResult):
    """An :class:`ExecResult` and what only the host needs: the raw bytes, and whether
    the host killed the command at its own deadline."""

    data: bytes = b""
    killed: bool = False


def _bounded(
    argv: list[str],
    env: dict[str, str],
    stdin: bytes,
    limit: int,
    seconds: float,
    *,
    raw: bool = False,
) -> _Done:
    """Run ``argv`` here: its stdout and stderr together, the first ``limit`` bytes kept
    (the rest counted), killed at ``seconds``. ``raw``: stdout alone, as bytes."""
    started = time.monotonic()
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL if raw else subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    kept = bytearray()
    dropped = 0
    killed = False
    pending = memoryview(stdin)
    assert process.stdin is not None and process.stdout is not None
    os.set_blocking(process.stdin.fileno(), False)
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if pending:
            selector.register(process.stdin, selectors.EVENT_WRITE)
        else:
            process.stdin.close()
        while selector.get_map():
            remaining = started + seconds - time.monotonic()
            if remaining <= 0:
                killed = True
                process.kill()
                break
            for key, _ in selector.select(min(remaining, 1.0)):
                if key.fileobj is process.stdin:
                    try:
                        written = os.write(process.stdin.fileno(), pending[: 1 << 16])
                    except (BrokenPipeError, BlockingIOError) as error:
                        written = 0 if isinstance(error, BlockingIOError) else len(pending)
                    pending = pending[written:]
                    if not pending:
                        selector.unregister(process.stdin)
                        process.stdin.close()
                    continue
                chunk = os.read(process.stdout.fileno(), 1 << 16)
                if not chunk:
                    selector.unregister(process.stdout)
                    continue
                room = limit - len(kept)
                kept += chunk[: max(room, 0)]
                dropped += max(len(chunk) - max(room, 0), 0)
    if not process.stdin.closed:
        process.stdin.close()
    process.stdout.close()
    try:
        exit_code = process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        exit_code = process.wait()
    data = bytes(kept)
    return _Done(
        exit_code=None if killed else exit_code,
        output="" if raw else data.decode("utf-8", errors="replace"),
        dropped=dropped,
        seconds=round(time.monotonic() - started, 3),
        data=data if raw else b"",
        killed=killed,
    )


def _last(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"
