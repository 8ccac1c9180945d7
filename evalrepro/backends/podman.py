"""Rootless Podman: three content-addressed image layers and one ``podman run`` per attempt.

Layers (each key = sha256 over the canonical JSON of its build inputs and its parent's
key; the tag carries the key, so an unchanged layer is found, not rebuilt):

* ``base``: a Debian rootfs made by mmdebstrap (suite, mirror, packages,
  SOURCE_DATE_EPOCH from the environment config), imported ``FROM scratch``;
* ``env``: a venv with a spec's pinned packages (``pip install`` needs the network: the
  build gets host networking and the host's CA bundle, mounted, never baked in);
* ``history``: a repo's whole git history as a bare repo, shared by its instances;
* ``instance``: the tree at the base commit, whose ``.git`` borrows the history's
  objects; then the spec's install command.

Every build uses ``--timestamp 0`` and ``--pull=never``; the recorded digest is the image
Id (config digest), the one that is stable across stores. The runtime settings that work
on these machines (runc, cgroupfs, file events, explicit ulimits) live in
``backends/podman/containers.conf``, which the backend points ``CONTAINERS_CONF`` at.
"""

from __future__ import annotations

import fcntl
import os
import selectors
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import ClassVar

from evalrepro import atomic
from evalrepro.backends import register_backend
from evalrepro.backends.base import (
    AttemptRequest,
    AttemptRun,
    Backend,
    BuildFailure,
    ImageChain,
    ImageRecord,
    Layer,
)
from evalrepro.backends.tether import run_tethered
from evalrepro.digest import sha256_bytes, sha256_json
from evalrepro.environment import PodmanEnvironment
from evalrepro.errors import UserError
from evalrepro.evalscript import (
    GUARD_PATH,
    PATCH_PATH,
    PROGRAM_PATH,
    SUPERVISOR_PATH,
    TEST_PATCH_PATH,
)
from evalrepro.repos import LocalCheckout, RepoError
from evalrepro.sandbox import GUARD, SUPERVISOR
from evalrepro.supervision import TEST_USER, RuntimeFacts, StreamReader, SupervisorReport
from evalrepro.testspec import PYTHON_SUITES, TestSpec

PACKAGE_DIR = Path(__file__).resolve().parent.parent
#: dpkg path filters of the base rootfs: no manuals, docs (but copyrights), locales, info.
DPKG_FILTERS = (
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/locale/*",
    "path-exclude=/usr/share/info/*",
)
#: Run in the finished rootfs. Debian's postinst byte-compiles Python modules, and those
#: .pyc files differ between root and rootless builds: without them, the rootfs tar (and
#: so the base image Id) is the same in both modes. Python recompiles them on demand.
#: Then the unprivileged user the code under test runs as (fixed lines: reproducible).
_USER = TEST_USER
CUSTOMIZE_HOOKS = (
    'find "$1/usr" -name __pycache__ -type d -prune -exec rm -rf {} +',
    f"echo '{_USER['name']}:x:{_USER['uid']}:{_USER['gid']}:evalrepro tests:{_USER['home']}:"
    f'/bin/bash\' >> "$1/etc/passwd"',
    f"echo '{_USER['name']}:x:{_USER['gid']}:' >> \"$1/etc/group\"",
    f"echo '{_USER['name']}:*:19000:0:99999:7:::' >> \"$1/etc/shadow\"",
    f"echo '{_USER['name']}:!::' >> \"$1/etc/gshadow\"",
    f'mkdir -p "$1{_USER["home"]}" && chown {_USER["uid"]}:{_USER["gid"]} "$1{_USER["home"]}"',
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


def backend_files() -> Path:
    """``backends/podman/`` of a checkout, or the copy a wheel carries."""
    for candidate in (
        PACKAGE_DIR / "backend_files" / "podman",
        PACKAGE_DIR.parent / "backends" / "podman",
    ):
        if (candidate / "containers.conf").is_file():
            return candidate
    raise UserError(f"evalrepro's podman files are missing (looked near {PACKAGE_DIR})")


class BuildError(Exception):
    def __init__(self, reason: str, log: Path | None = None) -> None:
        super().__init__(reason)
        self.log = log


@register_backend
class PodmanBackend(Backend):
    kind: ClassVar[str] = "podman"

    def __init__(self, config: PodmanEnvironment, cache_dir: Path) -> None:
        self.config = config
        self.cache_dir = cache_dir
        self.files = backend_files()
        self.rootless = os.geteuid() != 0
        self.env = {**os.environ, "CONTAINERS_CONF": str(self.files / "containers.conf")}
        self._layers: dict[str, ImageRecord | BuildFailure] = {}
        self._running: set[str] = set()

    # --- lifecycle -------------------------------------------------------------------

    def check(self) -> None:
        if shutil.which("podman") is None:
            raise UserError("podman is not installed; run scripts/setup (it installs podman)")
        if self.rootless and not _has_subids():
            raise UserError(
                "rootless podman needs subordinate ids for this user in /etc/subuid and "
                "/etc/subgid; run scripts/setup or add them with usermod --add-subuids"
            )
        done = self._podman(
            "info", "--format", "{{.Store.GraphDriverName}} {{.Version.Version}}", check=False
        )
        if done.returncode != 0:
            raise UserError(f"podman does not work here: {_last_line(done.stderr)}")
        self.storage_driver, self.version = [*done.stdout.split(), "?", "?"][:2]
        self._clean_staging()

    def describe(self) -> dict[str, str]:
        return {
            "kind": self.kind,
            "mode": "rootless" if self.rootless else "root",
            "podman": getattr(self, "version", "?"),
            "storage_driver": getattr(self, "storage_driver", "?"),
            "runtime": "runc",
        }

    def prepare(
        self, specs: list[TestSpec], checkouts: dict[str, LocalCheckout]
    ) -> dict[str, ImageChain | BuildFailure]:
        chains: dict[str, ImageChain | BuildFailure] = {}
        bases: dict[str, ImageRecord | BuildFailure] = {}
        for spec in specs:
            # A spec that names its Python gets the base of the Debian suite shipping it.
            suite = PYTHON_SUITES[spec.python] if spec.python else self.config.base.suite
            if suite not in bases:
                bases[suite] = self._layer(
                    "base", self._base_inputs(suite), None, partial(self._stage_base, suite)
                )
            base = bases[suite]
            checkout = checkouts[spec.instance_id]
            steps: list[tuple[Layer, dict, Stage]] = [
                ("env", {"packages": spec.packages}, partial(_stage_env, spec.packages)),
                (
                    "history",
                    {"source": checkout.source_digest},
                    partial(_stage_history, checkout),
                ),
                (
                    "instance",
                    {"repo": spec.repo, "base_commit": spec.base_commit, "install": spec.install},
                    partial(_stage_instance, checkout, spec, self.config.base.source_date_epoch),
                ),
            ]
            chain: list[ImageRecord] = []
            record = base
            for layer, inputs, stage in steps:
                if isinstance(record, BuildFailure):
                    break
                chain.append(record)
                record = self._layer(layer, inputs, record, stage)
            if isinstance(record, BuildFailure):
                chains[spec.instance_id] = record.model_copy(update={"below": chain})
            else:
                chains[spec.instance_id] = ImageChain(layers=[*chain, record])
        return chains

    def run(self, request: AttemptRequest) -> AttemptRun:
        flags, limits = self._limit_flags()
        mounts = [
            (SUPERVISOR, SUPERVISOR_PATH),
            (GUARD, GUARD_PATH),
            (request.attempt_dir / "program.json", PROGRAM_PATH),
            (request.attempt_dir / "patch.diff", PATCH_PATH),
            (request.attempt_dir / "test.patch", TEST_PATCH_PATH),
        ]
        command = [
            "run",
            "--rm",
            "--name",
            request.name,
            "--network",
            "none",
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
            f"--timeout={int(request.timeout) + _PRE_TEST_SECONDS + _BACKSTOP_SECONDS}",
            *flags,
            # Read-only inputs only: the container has no way to write to the host.
            *(f"--volume={source}:{target}:ro" for source, target in mounts),
            request.image_tag,
            "/usr/bin/python3",
            "-I",
            "-S",
            SUPERVISOR_PATH,
            PROGRAM_PATH,
        ]
        reader = StreamReader(request.attempt_dir / "test_output.txt", request.output_limit)
        started = time.monotonic()
        deadline = started + _PRE_TEST_SECONDS
        deadline_passed = False
        self._running.add(request.name)
        try:
            # Its own session: a Ctrl-C at the terminal stops evalrepro, which lets the
            # running attempts finish; it must not reach (and kill) their containers.
            process = subprocess.Popen(
                ["podman", *command],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.env,
                start_new_session=True,
            )
            with BoundedLog(request.attempt_dir / "runtime.log", _RUNTIME_LOG_BYTES) as log:
                # How to run this container by hand: podman needs evalrepro's settings.
                log.write(
                    f"# CONTAINERS_CONF={shlex.quote(self.env['CONTAINERS_CONF'])} "
                    f"podman {shlex.join(command)}\n".encode()
                )
                pipes = {process.stdout.fileno(): reader.feed, process.stderr.fileno(): log.write}
                with selectors.DefaultSelector() as selector:
                    for fd in pipes:
                        selector.register(fd, selectors.EVENT_READ)
                    testing = False
                    while selector.get_map():
                        if not testing and reader.report.tests_started is not None:
                            # The supervisor stops the tests at the timeout; this is a backstop.
                            deadline = time.monotonic() + request.timeout + _GRACE_SECONDS
                            testing = True
                        remaining = deadline - time.monotonic()
                        if remaining <= 0 or reader.problem is not None:
                            deadline_passed = remaining <= 0
                            self._remove(request.name)
                            break
                        for key, _ in selector.select(min(remaining, 1.0)):
                            data = os.read(key.fd, 1 << 16)
                            if not data:
                                selector.unregister(key.fd)
                            else:
                                pipes[key.fd](data)
                exit_code = _wait(process, 30)
        except OSError as error:
            reader.discard()
            return AttemptRun(
                SupervisorReport(runtime=RuntimeFacts(error=f"podman could not start: {error}")),
                limits,
            )
        finally:
            self._running.discard(request.name)
        error = None
        if exit_code in _RUNTIME_FAILURES and reader.report.start is None:
            error = f"{_RUNTIME_FAILURES[exit_code]} (podman exit code {exit_code})"
            logged = (request.attempt_dir / "runtime.log").read_text(errors="replace")
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
        return AttemptRun(reader.finish(runtime), limits)

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

    # --- layers ----------------------------------------------------------------------

    def _layer(
        self, layer: Layer, inputs: dict, parent: ImageRecord | None, stage: Stage
    ) -> ImageRecord | BuildFailure:
        """The layer with these inputs: found by its key's tag, else built, once a run."""
        containerfile = self.files / f"Containerfile.{layer}"
        key = sha256_json(
            {
                "layer": layer,
                "parent": parent.key if parent else None,
                "containerfile": sha256_bytes(containerfile.read_bytes()),
                "inputs": inputs,
            }
        )
        if key not in self._layers:
            self._layers[key] = self._find_or_build(
                layer, key, sha256_json(inputs), containerfile, parent, stage
            )
        return self._layers[key]

    def _find_or_build(
        self,
        layer: Layer,
        key: str,
        inputs_digest: str,
        containerfile: Path,
        parent: ImageRecord | None,
        stage: Stage,
    ) -> ImageRecord | BuildFailure:
        tag = f"localhost/evalrepro-{layer}:{key.removeprefix('sha256:')[:24]}"
        build_log = self.cache_dir / "builds" / f"{layer}-{key.removeprefix('sha256:')}.log"
        built, build_seconds = False, 0.0
        try:
            image_id = self._image_id(tag)
            if image_id is None:
                started = time.monotonic()
                self._build(containerfile, tag, parent, stage, build_log)
                built, build_seconds = True, round(time.monotonic() - started, 3)
                image_id = self._image_id(tag)
                if image_id is None:
                    raise BuildError(f"{tag} is missing right after its build", build_log)
            return ImageRecord(
                layer=layer,
                key=key,
                inputs_digest=inputs_digest,
                tag=tag,
                parent_key=parent.key if parent else None,
                image_digest=f"sha256:{image_id}",
                built=built,
                build_seconds=build_seconds,
                package_manifest_digest=self._record_package_manifest(tag, image_id)
                if layer == "base"
                else None,
            )
        except (BuildError, RepoError) as error:
            log = getattr(error, "log", None)
            return BuildFailure(
                layer=layer, key=key, reason=str(error), build_log=str(log) if log else None
            )

    def _build(
        self,
        containerfile: Path,
        tag: str,
        parent: ImageRecord | None,
        stage: Stage,
        build_log: Path,
    ) -> None:
        """Stage a build context, then ``podman build`` it; the tag appears only on success."""
        build_log.parent.mkdir(parents=True, exist_ok=True)
        with self._staging() as context:
            shutil.copy(containerfile, context / "Containerfile")
            build_args = stage(context)
            epoch = self.config.base.source_date_epoch
            args = [
                "build",
                "--pull=never",
                "--timestamp",
                "0",
                "--layers=false",
                "--file",
                str(context / "Containerfile"),
                "--tag",
                tag,
                "--build-arg",
                f"SOURCE_DATE_EPOCH={epoch}",
                *(["--build-arg", f"PARENT={parent.tag}"] if parent else []),
                *(
                    arg
                    for name, value in build_args.items()
                    for arg in ("--build-arg", f"{name}={value}")
                ),
                # Builds that download (pip) get the host's network and CA bundle.
                "--network",
                "host",
                *self._ca_mount(),
                str(context),
            ]
            with build_log.open("wb") as log:
                returncode = run_tethered(["podman", *args], stdout=log, env=self.env)
            if returncode != 0:
                tail = _last_line(build_log.read_text(errors="replace"))
                raise BuildError(f"building {tag} failed: {tail}", build_log)

    def _ca_mount(self) -> list[str]:
        bundle = self.config.build.ca_bundle
        if bundle is None or not Path(bundle).is_file():
            return []
        return ["--volume", f"{bundle}:/etc/ssl/certs/ca-certificates.crt:ro"]

    def _base_inputs(self, suite: str) -> dict:
        base = self.config.base
        return {
            "suite": suite,
            "mirror": base.mirror,
            "packages": sorted(base.packages),
            "source_date_epoch": base.source_date_epoch,
            "variant": "minbase",
            "dpkg_filters": list(DPKG_FILTERS),
            "customize_hooks": list(CUSTOMIZE_HOOKS),
        }

    def _stage_base(self, suite: str, context: Path) -> dict[str, str]:
        rootfs = self._rootfs(suite)
        os.link(rootfs, context / "rootfs.tar")
        return {}

    def _rootfs(self, suite: str) -> Path:
        """The mmdebstrap tarball of the base inputs, made once and cached by their key."""
        key = sha256_json(self._base_inputs(suite)).removeprefix("sha256:")
        rootfs = self.cache_dir / "rootfs" / f"{key}.tar"
        if rootfs.exists():
            return rootfs
        rootfs.parent.mkdir(parents=True, exist_ok=True)
        base = self.config.base
        log = self.cache_dir / "builds" / f"rootfs-{key}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        if shutil.which("mmdebstrap") is None:
            raise BuildError("mmdebstrap is not installed; run scripts/setup")
        with self._staging() as scratch, log.open("wb") as out:
            partial_tar = scratch / "rootfs.tar"
            returncode = run_tethered(
                self._mmdebstrap_command(partial_tar, suite),
                stdout=out,
                env={**os.environ, "SOURCE_DATE_EPOCH": str(base.source_date_epoch)},
            )
            if returncode != 0:
                raise BuildError(
                    f"mmdebstrap failed: {_last_line(log.read_text(errors='replace'))}", log
                )
            os.replace(partial_tar, rootfs)
        return rootfs

    def _mmdebstrap_command(self, output: Path, suite: str) -> list[str]:
        base = self.config.base
        return [
            "mmdebstrap",
            "--variant=minbase",
            "--skip=output/dev",
            # A user namespace works for root and rootless alike: one mode, one tarball.
            "--mode=unshare",
            f"--include={','.join(base.packages)}",
            *(f"--dpkgopt={rule}" for rule in DPKG_FILTERS),
            *(f"--customize-hook={hook}" for hook in CUSTOMIZE_HOOKS),
            suite,
            str(output),
            base.mirror,
        ]

    # --- staging ---------------------------------------------------------------------

    @contextmanager
    def _staging(self) -> Iterator[Path]:
        """A scratch folder for one build, locked while the build uses it."""
        root = self.cache_dir / "staging"
        root.mkdir(parents=True, exist_ok=True)
        path = Path(tempfile.mkdtemp(dir=root))
        with (path / ".lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield path
            finally:
                self._remove_tree(path)

    def _clean_staging(self) -> list[Path]:
        """Remove the staging folders of builds that died (no process holds their lock)."""
        root = self.cache_dir / "staging"
        removed = []
        for path in sorted(root.iterdir()) if root.is_dir() else []:
            try:
                with (path / ".lock").open("a") as lock:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a build of another evalrepro process, still running
            except OSError:
                pass  # no lock file: a folder from before locks, or a half-made one
            self._remove_tree(path)
            removed.append(path)
        return removed

    def _remove_tree(self, path: Path) -> None:
        """Delete ``path``; rootless, files a user namespace made (sub-uids) need one too."""
        shutil.rmtree(path, ignore_errors=True)
        if path.exists() and self.rootless:
            subprocess.run(
                ["podman", "unshare", "rm", "-rf", "--", str(path)],
                env=self.env,
                capture_output=True,
                check=False,
            )

    def _manifest_file(self, image_id: str) -> Path:
        # Named by the image Id, not the tag: a tag rebuilt from the same inputs can hold
        # other packages (the mirror moved on), and its list must not be the old one's.
        return self.cache_dir / "images" / f"{image_id.removeprefix('sha256:')}.packages.txt"

    def _record_package_manifest(self, tag: str, image_id: str) -> str:
        """The base image's installed packages (name=version), kept as a file; its digest."""
        manifest = self._manifest_file(image_id)
        if not manifest.exists():
            done = self._podman(
                "run",
                "--rm",
                "--network",
                "none",
                tag,
                "dpkg-query",
                "--show",
                "--showformat=${Package}=${Version}\\n",
                check=False,
            )
            if done.returncode != 0:
                raise BuildError(f"cannot list the packages of {tag}: {_last_line(done.stderr)}")
            atomic.write_text(manifest, "\n".join(sorted(done.stdout.splitlines())) + "\n")
        return sha256_bytes(manifest.read_bytes())

    def package_manifest(self, base: ImageRecord) -> Path | None:
        manifest = self._manifest_file(base.image_digest)
        return manifest if manifest.exists() else None

    def remove_leftovers(self, prefix: str) -> list[str]:
        done = self._podman("ps", "--all", "--format", "{{.Names}}", check=False)
        names = sorted(name for name in done.stdout.split() if name.startswith(prefix))
        for name in names:
            self._remove(name)
        return names

    # --- podman CLI ------------------------------------------------------------------

    def _podman(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(
            ["podman", *args], capture_output=True, text=True, env=self.env, check=False
        )
        if check and done.returncode != 0:
            raise BuildError(f"podman {args[0]} failed: {_last_line(done.stderr)}")
        return done

    def _image_id(self, tag: str) -> str | None:
        done = self._podman("image", "inspect", "--format", "{{.Id}}", tag, check=False)
        return done.stdout.strip() or None if done.returncode == 0 else None

    def _remove(self, name: str) -> None:
        self._podman("rm", "--force", "--time", "0", name, check=False)


Stage = Callable[[Path], dict[str, str]]


class BoundedLog:
    """A log file that keeps the first ``most`` bytes and counts the rest."""

    def __init__(self, path: Path, most: int) -> None:
        self.path = path
        self.most = most
        self.seen = 0

    def __enter__(self) -> BoundedLog:
        self._file = self.path.open("wb")
        return self

    def write(self, data: bytes) -> None:
        room = self.most - self.seen
        if room > 0:
            self._file.write(data[:room])
        self.seen += len(data)

    def __exit__(self, *_: object) -> None:
        if self.seen > self.most:
            self._file.write(f"\n[{self.seen - self.most} more bytes not kept]\n".encode())
        self._file.close()


def _stage_env(packages: Sequence[str], context: Path) -> dict[str, str]:
    (context / "requirements.txt").write_text("".join(f"{p}\n" for p in packages))
    return {}


def _stage_history(checkout: LocalCheckout, context: Path) -> dict[str, str]:
    checkout.export_history(context / "repo.git")
    return {}


def _stage_instance(
    checkout: LocalCheckout, spec: TestSpec, epoch: int, context: Path
) -> dict[str, str]:
    if not checkout.has_commit(spec.base_commit):
        raise RepoError(f"base commit {spec.base_commit} is not in {spec.repo}'s history")
    testbed = context / "testbed"
    checkout.export_tree(spec.base_commit, testbed)
    # A .git of fixed bytes: HEAD at the base commit, objects from the history layer.
    git_dir = testbed / ".git"
    for folder in ("objects/info", "refs/heads", "refs/tags"):
        (git_dir / folder).mkdir(parents=True, exist_ok=True)
    (git_dir / "HEAD").write_text(f"{spec.base_commit}\n")
    (git_dir / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
    )
    (git_dir / "objects" / "info" / "alternates").write_text("/opt/evalrepro/repo.git/objects\n")
    for path in sorted(testbed.rglob("*"), reverse=True):
        os.utime(path, (epoch, epoch), follow_symlinks=False)
    os.utime(testbed, (epoch, epoch))
    return {"INSTALL": spec.install or ""}


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


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""
