"""Environment: how the isolated runtime of a trial is built and limited.

One pydantic config per backend kind, selected by ``kind``. The image layers
(base -> env -> instance) and their content keys are built by the backend; this module
only declares what the user can set.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

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
    tasks, ``disk`` the bytes they write, ``output`` what they print; the reserves stop a
    trial before the machine itself runs short, whatever is to blame.
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
    #: Bytes of test output kept; more stops the trial.
    output: str = Field(default="64m", pattern=_SIZE)
    #: Stop a trial when the machine has less memory available than this.
    memory_reserve: str = Field(default="1g", pattern=_SIZE)
    #: Stop a trial when the filesystem has less free space than this.
    disk_reserve: str = Field(default="1g", pattern=_SIZE)
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


class ContainerfileBuilderConfig(BaseModel):
    """Layers built by ``podman build`` from evalrepro's Containerfiles, the base by
    mmdebstrap."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["containerfile"] = "containerfile"


class NixBuilderConfig(BaseModel):
    """Images built by Nix from inputs pinned by hash (no nixpkgs), loaded into podman."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["nix"] = "nix"
    #: A Debian archive that keeps old versions (snapshot.debian.org at a date on or after
    #: the lock): each .deb's URL in the lockfile is there, where Nix fetches it on a
    #: machine with internet (evalrepro tries the mirror and ``base.archive`` first).
    #: null: the mirror's own URL (which drops old versions).
    archive: str | None = "https://snapshot.debian.org/archive/debian/20261201T000000Z"
    #: The Python package index the env layer's wheels are pinned from.
    index_url: str = "https://pypi.org/simple"


#: An image reference pinned by manifest digest: registry host (with a '.' or a port, or
#: localhost), repository path, no tag.
_PINNED_REFERENCE = re.compile(
    r"^(?P<repository>(?:localhost(?::\d+)?|[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)+(?::\d+)?|[a-zA-Z0-9-]+:\d+)"
    r"(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)+)@(?P<digest>sha256:[0-9a-f]{64})$"
)


def parse_pinned_reference(reference: str) -> tuple[str, str] | None:
    """``registry/name@sha256:<hex>`` -> (repository, manifest digest); None if not one."""
    match = _PINNED_REFERENCE.match(reference)
    return (match["repository"], match["digest"]) if match else None


class PrebuiltImageConfig(BaseModel):
    """Images someone else built, pulled by digest (e.g. SWE-bench's published images).

    Each image is used as is: it must hold what the trial supervisor needs (see
    ``evalrepro.builders.image``): the tree at ``/testbed`` owned by uid 1000, the
    harness's git store at ``/opt/evalrepro/repo.git``, ``/usr/bin/python3``, git, patch.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["image"] = "image"
    #: Instance id -> its image, pinned by manifest digest, with its registry named:
    #: ``registry.example/name@sha256:<64 hex>`` (no tag; a short name is refused, since
    #: machines resolve short names differently).
    images: dict[str, str] = Field(default_factory=dict)
    #: Verify TLS when pulling (a registry on 127.0.0.1 without TLS needs false).
    tls_verify: bool = True

    @field_validator("images")
    @classmethod
    def _pinned_by_digest(cls, images: dict[str, str]) -> dict[str, str]:
        for instance_id, reference in images.items():
            if parse_pinned_reference(reference) is None:
                raise ValueError(
                    f"instance {instance_id}: {reference!r} is not an image pinned by digest "
                    "(write registry.example/name@sha256:<64 hex>: a registry host, no tag)"
                )
        return images


BuilderConfig = Annotated[
    ContainerfileBuilderConfig | NixBuilderConfig | PrebuiltImageConfig,
    Field(discriminator="kind"),
]


class PodmanEnvironment(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["podman"] = "podman"
    #: How images are made: ``containerfile`` (default), ``nix`` or ``image``; a name
    #: alone (``environment.builder=nix``) selects the kind with its defaults.
    builder: BuilderConfig = Field(default_factory=ContainerfileBuilderConfig)
    #: The base image (a Debian root filesystem).
    base: BaseImageSpec = Field(default_factory=BaseImageSpec)
    #: How images are built (not part of any image's identity).
    build: BuildSettings = Field(default_factory=BuildSettings)
    #: Resource limits of every trial (see the README's threat model for how each is enforced).
    limits: Limits = Field(default_factory=Limits)
    #: Seconds the test command may run before the container is killed (-> invalid).
    timeout: int = Field(default=300, gt=0)
    #: Attempts per trial when the infrastructure fails; the plan's trial count is fixed.
    max_attempts: int = Field(default=2, ge=1, le=10)
    #: Trials run at once (and independent image layers built at once, containerfile builder).
    max_workers: int = Field(default=2, ge=1)
    #: Trials run without network (the only choice).
    network: Literal["none"] = "none"
    #: Let the code under test create user namespaces (a browser's sandbox needs them).
    #: Off by default: in one it could mount a tmpfs that the memory watchdog never sees.
    allow_user_namespaces: bool = False

    @field_validator("builder", mode="before")
    @classmethod
    def _builder_by_name(cls, value: object) -> object:
        return {"kind": value} if isinstance(value, str) else value


class RecordedEnvironment(BaseModel):
    """The environment of logs another harness wrote (``evalrepro regrade``): nothing is
    known of its images or limits, and it runs no trial."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["recorded"] = "recorded"
    #: The harness that wrote the logs.
    harness: str = "swebench"


EnvironmentConfig = Annotated[PodmanEnvironment | RecordedEnvironment, Field(discriminator="kind")]
