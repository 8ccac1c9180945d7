"""Podman (rootless or root): one ``podman run`` per attempt, and the image store the
builders put their images in.

The runtime settings that work on these machines (runc, cgroupfs, file events, explicit
ulimits) live in ``backends/podman/containers.conf``, which the runtime points
``CONTAINERS_CONF`` at, for every podman command evalrepro runs (builders' included).
"""

from __future__ import annotations

import json
import os
import selectors
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import ClassVar

from evalrepro import atomic
from evalrepro.config.environment import PodmanEnvironment
from evalrepro.digest import sha256_bytes, sha256_json
from evalrepro.errors import UserError
from evalrepro.grade.rerun import MAX_RERUN_TESTS, select_reruns
from evalrepro.records.supervision import RuntimeFacts, SupervisorReport
from evalrepro.runtimes.attempt import AttemptOutput, AttemptSpec
from evalrepro.runtimes.base import Runtime
from evalrepro.runtimes.interactive import Sandbox, SandboxRequest
from evalrepro.runtimes.podman_store import PodmanStore
from evalrepro.runtimes.store import StoreError, backend_files, last_line
from evalrepro.runtimes.supervision import StreamReader, region_text
from evalrepro.sandbox import (
    GUARD,
    GUARD_PATH,
    PATCH_PATH,
    PRIVATE_DIR,
    PROGRAM_PATH,
    SUPERVISOR_PATH,
    shipped_supervisor,
)

#: How long the phases before the tests (patch, reset) may take, in seconds.
_PRE_TEST_SECONDS = 600
#: How long after the supervisor's own timeout the host removes the container.
_GRACE_SECONDS = 30
#: How long after evalrepro's own deadline conmon kills a container whose run was orphaned.
_BACKSTOP_SECONDS = 60
#: What root podman's cgroups allow beyond the limits the watchdog enforces.
_CGROUP_MEMORY_HEADROOM = 256 << 20
_CGROUP_PIDS_HEADROOM = 64
#: Bytes of podman's and the supervisor's stderr kept in runtime.log.
_RUNTIME_LOG_BYTES = 1 << 20
#: podman's own exit codes for "could not run the container at all".
_RUNTIME_FAILURES = {125: "podman error", 126: "command not executable", 127: "command not found"}


def _file_digest(path: str) -> str | None:
    try:
        return sha256_bytes(Path(path).read_bytes())
    except OSError:
        return None


#: A podman command failed (the image store's error: a builder makes it a build failure).
PodmanError = StoreError


class PodmanRuntime(Runtime):
    kind: ClassVar[str] = "podman"
    #: The program every container command runs (docker's CLI takes the same commands
    #: for what a run and a sandbox need: ``evalrepro.runtimes.docker``).
    tool: ClassVar[str] = "podman"

    def __init__(self, config: PodmanEnvironment, cache_dir: Path) -> None:
        self.config = config
        self.cache_dir = cache_dir
        self.files = backend_files()
        self.rootless = os.geteuid() != 0
        self.env = {**os.environ, "CONTAINERS_CONF": str(self.files / "containers.conf")}
        self._running: set[str] = set()
        #: Where the images are: what builders fill and archives export from.
        self.images = PodmanStore(self.env, cache_dir, rootless=self.rootless)

    # --- lifecycle -------------------------------------------------------------------

    def check(self) -> None:
        if shutil.which("podman") is None:
            raise UserError("podman is not installed; run scripts/setup (it installs podman)")
        if self.rootless and not _has_subids():
            raise UserError(
                "rootless podman needs subordinate ids for this user in /etc/subuid and "
                "/etc/subgid; run scripts/setup or add them with usermod --add-subuids"
            )
        self.storage_driver, self.version, graph_root = self._info()
        #: Where the containers' files are written (an agent's sandbox is watched there).
        self.graph_root = graph_root

    def _info(self) -> tuple[str, str, str]:
        """(storage driver, podman's version, graph root), as ``podman info`` says, kept by
        what decides them: ``podman info`` surveys the whole host and takes 0.2-0.5 s of
        every command; its answer changes only with podman itself, its configuration, this
        user, or a store made anew (then the driver's folder is not where it was)."""
        known = self.cache_dir / "podman-info" / f"{self._info_key()[7:31]}.json"
        try:
            driver, version, root = json.loads(known.read_text())
            if (Path(root) / f"{driver}-images").is_dir():
                return driver, version, root
        except (OSError, ValueError, TypeError):
            pass
        done = self.podman(
            "info",
            "--format",
            "{{.Store.GraphDriverName}} {{.Version.Version}} {{.Store.GraphRoot}}",
            check=False,
        )
        if done.returncode != 0:
            raise UserError(f"podman does not work here: {_last_line(done.stderr)}")
        driver, version, root = [*done.stdout.strip().split(" ", 2), "?", "?", ""][:3]
        if root:
            known.parent.mkdir(parents=True, exist_ok=True)
            atomic.write_text(known, json.dumps([driver, version, root]))
        return driver, version, root

    def _info_key(self) -> str:
        binary = Path(shutil.which("podman") or "podman").resolve()
        stat = binary.stat()
        config_home = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
        files = [
            os.environ.get("CONTAINERS_STORAGE_CONF", ""),
            "/etc/containers/storage.conf",
            "/usr/share/containers/storage.conf",
            str(config_home / "containers" / "storage.conf"),
            self.env["CONTAINERS_CONF"],
        ]
        return sha256_json(
            {
                "podman": [str(binary), stat.st_size, stat.st_mtime_ns, stat.st_ino],
                "user": os.geteuid(),
                # A rootless store's default place follows these.
                "places": [
                    os.environ.get(v, "") for v in ("HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR")
                ],
                "files": {f: _file_digest(f) for f in files if f},
            }
        )

    def describe(self) -> dict[str, str]:
        return {
            "kind": self.kind,
            "mode": "rootless" if self.rootless else "root",
            "podman": getattr(self, "version", "?"),
            "storage_driver": getattr(self, "storage_driver", "?"),
            "runtime": "runc",
        }

    def run(self, spec: AttemptSpec) -> AttemptOutput:
        # The supervisor's inputs, mounted read-only: a private folder of this attempt's,
        # on this machine (the spec carries bytes, not paths), removed when it ends.
        with tempfile.TemporaryDirectory(prefix="evalrepro-attempt-") as inputs:
            folder = Path(inputs)
            os.chmod(folder, 0o755)  # rootless: the container's root is not this user
            # The program (canaries, fresh runs) and the test patch name the instance's
            # tests: in a folder only the container's root (the supervisor) may enter,
            # whose files the test user can neither read nor stat. The model patch is
            # read by the patch tools, which run as the test user.
            private = folder / "private"
            private.mkdir(mode=0o700)
            for path, data, mode in (
                (
                    private / "program.json",
                    spec.program.model_dump_json(indent=2).encode() + b"\n",
                    0o600,
                ),
                (private / "test.patch", spec.test_patch, 0o600),
                (folder / "patch.diff", spec.patch, 0o644),
                # The supervisor's modules, as one archive (what the eval script's digest
                # covers): this process's, whatever changes in the checkout meanwhile.
                (folder / "supervisor.pyz", shipped_supervisor().archive, 0o644),
            ):
                path.write_bytes(data)
                os.chmod(path, mode)
            os.chmod(private, 0o700)
            return self._run(spec, folder)

    def _run(self, spec: AttemptSpec, inputs: Path) -> AttemptOutput:
        assert spec.image is not None
        flags, limits = self._limit_flags()
        mounts = [
            (inputs / "supervisor.pyz", SUPERVISOR_PATH),
            (GUARD, GUARD_PATH),
            (inputs / "private", PRIVATE_DIR),
            (inputs / "patch.diff", PATCH_PATH),
            # No name or resolver of the host's (podman would write them in): the code
            # under test learns nothing of the machine, as an agent's sandbox does not.
            (self.files / "sandbox-hosts", "/etc/hosts"),
            (self.files / "sandbox-resolv.conf", "/etc/resolv.conf"),
        ]
        # The tests, then each fresh run and each re-run, have the timeout each.
        rerun = spec.program.rerun if spec.program is not None else None
        runs = 1 + (len(spec.program.fresh) if spec.program is not None else 0)
        runs += MAX_RERUN_TESTS * rerun.times + 1 if rerun is not None else 0
        command = [
            "run",
            *(["--interactive"] if rerun is not None else []),  # the host's word on re-runs
            "--rm",
            "--name",
            spec.sandbox_name,
            "--hostname",
            "sandbox",
            "--network",
            spec.network,
            "--init",
            "--pull",
            "never",
            # Nothing but the supervisor's stream comes back; conmon keeps no copy.
            "--log-driver",
            "none",
            # No setuid binary can give the test user root; the supervisor's watchdog
            # reads every test process's /proc entries, even one that hides.
            "--security-opt",
            "no-new-privileges",
            "--cap-add",
            "SYS_PTRACE",
            # A backstop only: if evalrepro is killed, conmon still stops the container.
            *self.backstop(int(spec.timeout) * runs + _PRE_TEST_SECONDS + _BACKSTOP_SECONDS),
            *flags,
            # Read-only inputs only: the container has no way to write to the host.
            *(f"--volume={source}:{target}:ro" for source, target in mounts),
            # The recorded Id, not the tag: a tag can name other bytes (another build of
            # the same inputs); the Id is what the lockfile pins.
            spec.image.digest,
            "/usr/bin/python3",
            "-I",
            "-S",
            SUPERVISOR_PATH,
            PROGRAM_PATH,
        ]
        reader = StreamReader(spec.output_limit)
        log = BoundedLog(_RUNTIME_LOG_BYTES)
        # How to run this container by hand.
        log.write(f"# {self.by_hand(command)}\n".encode())
        started = time.monotonic()
        deadline = started + _PRE_TEST_SECONDS
        deadline_passed = False
        self._running.add(spec.sandbox_name)
        try:
            # Its own session: a Ctrl-C at the terminal stops evalrepro, which lets the
            # running attempts finish; it must not reach (and kill) their containers.
            process = subprocess.Popen(
                [self.tool, *command],
                stdin=subprocess.PIPE if rerun is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.env,
                start_new_session=True,
            )
            pipes = {process.stdout.fileno(): reader.feed, process.stderr.fileno(): log.write}
            with selectors.DefaultSelector() as selector:
                for fd in pipes:
                    selector.register(fd, selectors.EVENT_READ)
                testing = False
                fresh: int | None = len(spec.program.fresh) if spec.program is not None else 0
                while selector.get_map():
                    if not testing and reader.report.tests_started is not None:
                        # The supervisor stops the tests at the timeout; this is a backstop.
                        deadline = time.monotonic() + spec.timeout + _GRACE_SECONDS
                        testing = True
                    if fresh is not None and reader.report.tests is not None:
                        # Then each fresh run and each re-run has the timeout of its own.
                        if rerun is not None:
                            fresh += self._ask_reruns(process, spec, reader)
                        if fresh:
                            deadline = time.monotonic() + fresh * spec.timeout + _GRACE_SECONDS
                        fresh = None
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 or reader.problem is not None:
                        deadline_passed = remaining <= 0
                        self._remove(spec.sandbox_name)
                        break
                    for key, _ in selector.select(min(remaining, 1.0)):
                        data = os.read(key.fd, 1 << 16)
                        if not data:
                            selector.unregister(key.fd)
                        else:
                            pipes[key.fd](data)
            exit_code = _wait(process, 30)
            if process.stdin is not None and fresh is not None:
                process.stdin.close()  # the tests never finished: nothing was asked
        except OSError as error:
            facts = RuntimeFacts(error=f"{self.tool} could not start: {error}")
            return AttemptOutput(report=SupervisorReport(runtime=facts), limits=limits)
        finally:
            self._running.discard(spec.sandbox_name)
        error = None
        if exit_code in _RUNTIME_FAILURES and reader.report.start is None:
            error = f"{_RUNTIME_FAILURES[exit_code]} ({self.tool} exit code {exit_code})"
            logged = log.text()
            tail = _last_line(
                "\n".join(line for line in logged.splitlines() if not line.startswith("# "))
            )
            error += f": {tail}" if tail else ""
        runtime = RuntimeFacts(
            exit_code=exit_code,
            deadline_passed=deadline_passed,
            error=error,
            seconds=round(time.monotonic() - started, 3),
        )
        report = reader.finish(runtime)
        return AttemptOutput(
            artifacts={"test_output.txt": reader.output, "runtime.log": log.data()},
            report=report,
            limits=limits,
        )

    def _ask_reruns(
        self, process: subprocess.Popen, spec: AttemptSpec, reader: StreamReader
    ) -> int:
        """Tell the supervisor which failing tests to re-run (``evalrepro.grade.rerun``),
        from the test output as it arrived; how many runs that asks for."""
        assert spec.program is not None and spec.program.rerun is not None
        tests, region = reader.report.tests, reader.report.region
        runs = []
        if tests is not None and tests.stopped is None and region is not None:
            text = region_text(reader.output, region)
            runs = select_reruns(spec.program.rerun, spec.program.canaries, text)
        request = json.dumps([run.model_dump() for run in runs]).encode() + b"\n"
        # A thread: the supervisor reads it only after its fresh runs.
        threading.Thread(target=_send, args=(process, request), daemon=True).start()
        times = spec.program.rerun.times
        return sum(1 if run.expect == "fail" else times for run in runs)

    def backstop(self, seconds: int) -> list[str]:
        """Flags that stop a container after ``seconds`` even if evalrepro died (conmon's
        timer): a backstop only, evalrepro enforces its own deadlines."""
        return [f"--timeout={seconds}"]

    def by_hand(self, command: list[str]) -> str:
        """The shell line that runs ``command`` by hand: podman needs evalrepro's settings."""
        return (
            f"CONTAINERS_CONF={shlex.quote(self.env['CONTAINERS_CONF'])} "
            f"podman {shlex.join(command)}"
        )

    def sandbox(self, request: SandboxRequest) -> Sandbox:
        from evalrepro.runtimes.podman_sandbox import PodmanSandbox

        return PodmanSandbox(self, request)

    def image_tree(self, request: SandboxRequest, path: str, *, limit: int) -> bytes:
        from evalrepro.runtimes.podman_sandbox import image_tree

        return image_tree(self, request, path, limit=limit)

    def close(self) -> None:
        for name in list(self._running):
            self._remove(name)

    # --- limits ----------------------------------------------------------------------

    def _limit_flags(self) -> tuple[list[str], dict[str, str]]:
        limits = self.config.limits
        # Any --ulimit replaces podman's defaults, so nofile and nproc always go together.
        flags = [
            f"--ulimit=nofile={limits.nofile}:{limits.nofile}",
            f"--ulimit=nproc={limits.nproc}:{limits.nproc}",
        ]
        # The supervisor's part is the same in both modes (see its module docstring).
        watchdog = "supervisor watchdog"
        enforced = {
            "memory": f"{watchdog}: {limits.memory} for all test processes together "
            f"(PSS + shared memory), data ulimit per process, machine reserve "
            f"{limits.memory_reserve}",
            "pids": f"kernel: nproc {limits.pids} in the trial's own user namespace; "
            f"{watchdog} stops the tests at the cap",
            "disk": f"{watchdog}: {limits.disk} written, file-size ulimit, filesystem "
            f"reserve {limits.disk_reserve}",
            "inodes": f"{watchdog}: {limits.inodes} files and folders created in the folders "
            f"the test user can write (counted by a walk, at most once a second), filesystem "
            f"reserve {limits.inodes_reserve} free inodes; no kernel limit (no quota)",
            "output": f"supervisor: {limits.output}",
            "time": "supervisor: the timeout, then the whole process tree is killed",
            "nofile": f"ulimit {limits.nofile}",
            "nproc": f"ulimit {limits.nproc} (per host user, what podman itself needs)",
        }
        if self.rootless:
            # Rootless podman with cgroupfs on cgroup v1 cannot use cgroups: say so.
            enforced["cpus"] = "not enforced (rootless: no cgroup)"
        else:
            # The cgroup is the backstop, with room for the supervisor and page cache: the
            # watchdog stops the tests at the limits themselves, as in rootless mode, so
            # that a trial is stopped at the same point with the same reason in both.
            memory = limits.in_bytes("memory")
            cgroup_memory = memory + max(_CGROUP_MEMORY_HEADROOM, memory // 4)
            cgroup_pids = limits.pids + _CGROUP_PIDS_HEADROOM
            flags += [
                f"--memory={cgroup_memory}",
                f"--pids-limit={cgroup_pids}",
                f"--cpus={limits.cpus:g}",
            ]
            enforced["memory"] = f"cgroup {cgroup_memory} bytes (backstop); " + enforced["memory"]
            enforced["pids"] = f"cgroup {cgroup_pids} (backstop); " + enforced["pids"]
            enforced["cpus"] = f"cgroup {limits.cpus:g}"
        return flags, enforced

    def remove_leftovers(self, prefix: str) -> list[str]:
        done = self.cli("ps", "--all", "--format", "{{.Names}}", check=False)
        names = sorted(name for name in done.stdout.split() if name.startswith(prefix))
        for name in names:
            self._remove(name)
        return names

    # --- podman CLI ------------------------------------------------------------------

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """Run the runtime's program (:attr:`tool`) with ``args``; its output as text."""
        done = subprocess.run(
            [self.tool, *args], capture_output=True, text=True, env=self.env, check=False
        )
        if check and done.returncode != 0:
            raise PodmanError(f"{self.tool} {args[0]} failed: {_last_line(done.stderr)}")
        return done

    def podman(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return self.cli(*args, check=check)

    def image_id(self, tag: str) -> str | None:
        return self.images.image_id(tag)

    def _remove(self, name: str) -> None:
        self.cli("rm", "--force", "--time", "0", name, check=False)

    def remove_tree(self, path: Path) -> None:
        self.images.remove_tree(path)


class BoundedLog:
    """A log kept in memory: the first ``most`` bytes, and a count of the rest."""

    def __init__(self, most: int) -> None:
        self.most = most
        self.seen = 0
        self._kept = bytearray()

    def write(self, data: bytes) -> None:
        room = self.most - self.seen
        if room > 0:
            self._kept += data[:room]
        self.seen += len(data)

    def data(self) -> bytes:
        more = self.seen - self.most
        tail = f"\n[{more} more bytes not kept]\n".encode() if more > 0 else b""
        return bytes(self._kept) + tail

    def text(self) -> str:
        return bytes(self._kept).decode(errors="replace")


def _send(process: subprocess.Popen, data: bytes) -> None:
    try:
        assert process.stdin is not None
        with process.stdin:
            process.stdin.write(data)
    except (OSError, ValueError):
        pass  # the supervisor ended first: it had nothing left to re-run


def _has_subids() -> bool:
    user = os.environ.get("USER") or _username()
    try:
        return any(
            line.split(":", 1)[0] in (user, str(os.getuid()))
            for line in Path("/etc/subuid").read_text().splitlines()
        )
    except OSError:
        return False


def _username() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


def _bytes(size: str) -> int:
    units = {"k": 1024, "m": 1024**2, "g": 1024**3}
    return int(size[:-1]) * units[size[-1]] if size[-1] in units else int(size)


def _wait(process: subprocess.Popen, seconds: float) -> int | None:
    try:
        return process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


#: The last line of a tool's output (kept under its old name for this module's callers).
_last_line = last_line
