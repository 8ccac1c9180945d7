"""Environment: how the isolated runtime of a trial is built and limited.

One pydantic config per backend kind, selected by ``kind``. The image layers
(base -> env -> instance) and their content keys are built by the backend; this module
only declares what the user can set.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalrepro.config.builders import (
    ContainerfileBuilderConfig,
    FakeBuilderConfig,
    RecordedBuilderConfig,
)
from evalrepro.plugins import config_union

#: What the trial supervisor needs in every base image.
REQUIRED_PACKAGES = ("python3", "git", "patch")


class BaseImageSpec(BaseModel):
    """The Debian root filesystem of the base layer (built with mmdebstrap)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The Debian suite of the base image (its python3 unless a spec names another).
    suite: str = "bookworm"
    #: The Debian mirror the base's packages are resolved against (at lock time) and
    #: fetched from; the image's apt points to it.
    mirror: str = "http://deb.debian.org/debian"
    #: An archive that keeps every version (a snapshot.debian.org URL such as
    #: ``https://snapshot.debian.org/archive/debian/20250520T000000Z``): pinned packages
    #: the mirror no longer has are fetched from it, checked by hash. Not part of any
    #: image's identity. null: the mirror only.
    archive: str | None = Field(default=None, pattern=r"^(?:https?|file)://[^\s'\"\[\]]+$")
    #: Debian packages of the base image (python3, git and patch are required).
    packages: list[str] = Field(
        default_factory=lambda: ["python3", "python3-venv", "git", "patch", "ca-certificates"]
    )
    #: Fixed timestamps make the rootfs tar, and so the image Id, bit-identical.
    source_date_epoch: int = Field(default=1_700_000_000, ge=0)

    @field_validator("packages")
    @classmethod
    def _supervisor_needs(cls, packages: list[str]) -> list[str]:
        missing = [name for name in REQUIRED_PACKAGES if name not in packages]
        if missing:
            raise ValueError(
                f"must include {', '.join(missing)}: the trial supervisor runs with the base "
                "image's python3 and applies patches with git and patch"
            )
        return packages


_SIZE = r"^\d+[kmg]?$"
_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def size_in_bytes(size: str) -> int:
    """``4g`` -> 4294967296; a plain number is bytes."""
    return int(size[:-1]) * _UNITS[size[-1]] if size[-1] in _UNITS else int(size)


class Limits(BaseModel):
    """Per-trial resource limits; each trial records how the host enforced each one.

    ``memory`` is all test processes together (shared memory included), ``pids`` their
    tasks, ``disk`` the bytes they write, ``inodes`` the files they create, ``output``
    what they print; the reserves stop a trial before the machine itself runs short,
    whatever is to blame.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Memory of all test processes together, shared memory included (k, m, g suffixes).
    memory: str = Field(default="4g", pattern=_SIZE)
    #: Tasks (processes and threads) of the test processes together.
    pids: int = Field(default=2048, ge=16)
    #: CPUs (root podman only: rootless on cgroup v1 cannot enforce it, and says so).
    cpus: float = Field(default=1.0, gt=0)
    #: Bytes the test processes may write.
    disk: str = Field(default="10g", pattern=_SIZE)
    #: Files and folders the test processes may create (and keep) in the folders they
    #: can write: 300,000 empty files cost almost no bytes, but exhaust the inodes.
    inodes: int = Field(default=100_000, ge=1000)
    #: Bytes of test output kept; more stops the trial.
    output: str = Field(default="64m", pattern=_SIZE)
    #: Stop a trial when the machine has less memory available than this.
    memory_reserve: str = Field(default="1g", pattern=_SIZE)
    #: Stop a trial when the filesystem has less free space than this.
    disk_reserve: str = Field(default="1g", pattern=_SIZE)
    #: Stop a trial when the filesystem has fewer free inodes than this.
    inodes_reserve: int = Field(default=100_000, ge=0)
    #: Open files per process (ulimit).
    nofile: int = Field(default=16384, ge=64)
    #: Processes per host user (ulimit podman itself needs).
    nproc: int = Field(default=16384, ge=16)

    def in_bytes(self, name: str) -> int:
        return size_in_bytes(getattr(self, name))


class BuildSettings(BaseModel):
    """How images are built (not part of any image's identity)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The host's CA bundle, mounted into builds that download (pip): TLS from inside a
    #: build works only with it here. Never baked into an image. null: mount nothing.
    ca_bundle: str | None = "/etc/ssl/certs/ca-certificates.crt"
    #: The npm registry a spec's npm specifiers are resolved against at lock time (its
    #: tarballs are pinned by sha256 and integrity, wherever they came from).
    npm_registry: str = Field(default="https://registry.npmjs.org/", pattern=r"^https?://\S+$")


BuilderConfig = config_union("builders")


class SandboxEnvironment(BaseModel):
    """What every environment that runs trials in a sandbox declares."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Resource limits of every trial (see docs/threat-model.md for how each is enforced).
    limits: Limits = Field(default_factory=Limits)
    #: Seconds the test command may run before the container is killed (-> invalid).
    timeout: int = Field(default=300, gt=0)
    #: Trials run without network (the only choice).
    network: Literal["none"] = "none"
    #: Let the code under test create user namespaces (a browser's sandbox needs them).
    #: Off by default: in one it could mount a tmpfs that the memory watchdog never sees.
    allow_user_namespaces: bool = False
    #: Re-run each failing FAIL_TO_PASS / PASS_TO_PASS test alone, up to this many times,
    #: in the same sandbox after the run; one that passes is flaky (docs/semantics.md,
    #: "Flaky tests in an evaluation"). 0: no re-runs.
    rerun_failed: int = Field(default=0, ge=0, le=10)
    #: How a flaky test counts: ``failed`` (a trial with one is not resolved) or
    #: ``passed`` (it counts as passing, if the lone canary among the re-runs failed).
    flaky_counts_as: Literal["failed", "passed"] = "failed"
    #: How images are built (not part of any image's identity).
    build: BuildSettings = Field(default_factory=BuildSettings)

    #: The runtime, ``module:class``, imported when a run opens the environment.
    implementation: ClassVar[str]
    #: Fields that are not what a trial measured, or that are compared through what they
    #: produced (the images' records): see ``evalrepro.config.identity``.
    identity: ClassVar[dict[str, str]] = {
        "build": "none",
        "limits": "digest",
        "timeout": "digest",
        "network": "digest",
        "kind": "digest",
        "builder": "digest",
        "base": "digest",
    }


class PodmanEnvironment(SandboxEnvironment):
    kind: Literal["podman"] = "podman"
    #: How images are made: ``containerfile`` (default), ``nix`` or ``image``; a name
    #: alone (``environment.builder=nix``) selects the kind with its defaults.
    builder: BuilderConfig = Field(default_factory=ContainerfileBuilderConfig)
    #: The base image (a Debian root filesystem).
    base: BaseImageSpec = Field(default_factory=BaseImageSpec)

    implementation: ClassVar[str] = "evalrepro.runtimes.podman:PodmanRuntime"

    @field_validator("builder", mode="before")
    @classmethod
    def _builder_by_name(cls, value: object) -> object:
        return {"kind": value} if isinstance(value, str) else value


class DockerEnvironment(PodmanEnvironment):
    """Docker (the root daemon, ``dockerd``): trials run in docker containers, started
    from the same images, by the same Id, as podman's (the builders build them in root's
    podman store; the runtime brings each into docker's store as a docker-archive, which
    keeps its Id). Debian 12 has no rootless Docker: see docs/runtimes.md."""

    kind: Literal["docker"] = "docker"  # type: ignore[assignment]

    implementation: ClassVar[str] = "evalrepro.runtimes.docker:DockerRuntime"


class FakeEnvironment(SandboxEnvironment):
    """No sandbox at all: a dry run of a plan, without podman. Images are records whose
    digests are functions of their inputs; each attempt's tests "run" in this process and
    print, in the instance parser's own format, the outcome ``tests`` names for every
    FAIL_TO_PASS and PASS_TO_PASS test. What follows (grading, scoring, the run directory,
    verify, reports) is the real thing. Nothing it says is about the patches."""

    kind: Literal["fake"] = "fake"
    #: ``pass``: every listed test passes; ``fail``: FAIL_TO_PASS fail, PASS_TO_PASS pass.
    tests: Literal["pass", "fail"] = "pass"
    #: Seconds each attempt's "tests" take (scheduling tests: a worker lost mid-attempt).
    seconds: float = Field(default=0.0, ge=0, le=3600)
    #: The images' records: made by the fake builder.
    builder: FakeBuilderConfig = Field(default_factory=FakeBuilderConfig)

    implementation: ClassVar[str] = "evalrepro.runtimes.fake:FakeRuntime"


class RecordedEnvironment(BaseModel):
    """The environment of logs another harness wrote (``evalrepro regrade``): nothing is
    known of its images or limits. Its runtime brings each instance's log in from
    ``logs/<instance_id>/`` as the attempt's output, instead of running tests."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["recorded"] = "recorded"
    #: The harness that wrote the logs.
    harness: str = "swebench"
    #: The logs folder: ``<instance_id>/test_output.txt`` (+ ``patch.diff``, ``report.json``).
    logs: Path | None = None
    #: How the logs are read: as swebench reads them, or strictly (see docs/grading.md).
    rules: Literal["swebench", "strict"] = "swebench"
    #: The images' record: one, ``recorded:unknown``, shared by every trial.
    builder: RecordedBuilderConfig = Field(default_factory=RecordedBuilderConfig)

    implementation: ClassVar[str] = "evalrepro.runtimes.recorded:RecordedRuntime"
    #: The path is where the logs were; what they hold is each attempt's recorded output.
    identity: ClassVar[dict[str, str]] = {"logs": "none", "kind": "digest", "builder": "digest"}
