"""Environment: how the isolated runtime of a trial is built and limited.

One pydantic config per backend kind, selected by ``kind``. The image layers
(base -> env -> instance) and their content keys are built by the backend; this module
only declares what the user can set.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class BaseImageSpec(BaseModel):
    """The Debian root filesystem of the base layer (built with mmdebstrap)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    suite: str = "bookworm"
    mirror: str = "http://deb.debian.org/debian"
    packages: list[str] = Field(
        default_factory=lambda: ["python3", "python3-venv", "git", "patch", "ca-certificates"]
    )
    #: Fixed timestamps make the rootfs tar, and so the image Id, bit-identical.
    source_date_epoch: int = Field(default=1_700_000_000, ge=0)


class Limits(BaseModel):
    """Per-trial resource limits; the trial result records which the host enforced."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    memory: str = Field(default="4g", pattern=r"^\d+[kmg]?$")
    pids: int = Field(default=2048, ge=16)
    cpus: float = Field(default=1.0, gt=0)
    nofile: int = Field(default=16384, ge=64)
    nproc: int = Field(default=16384, ge=16)


class BuildSettings(BaseModel):
    """How images are built (not part of any image's identity)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The host's CA bundle, mounted into builds that download (pip): TLS from inside a
    #: build works only with it here. Never baked into an image. null: mount nothing.
    ca_bundle: str | None = "/etc/ssl/certs/ca-certificates.crt"


class PodmanEnvironment(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["podman"] = "podman"
    base: BaseImageSpec = Field(default_factory=BaseImageSpec)
    build: BuildSettings = Field(default_factory=BuildSettings)
    limits: Limits = Field(default_factory=Limits)
    #: Seconds the test command may run before the container is killed (-> invalid).
    timeout: int = Field(default=300, gt=0)
    #: Attempts per trial when the infrastructure fails; the plan's trial count is fixed.
    max_attempts: int = Field(default=2, ge=1, le=10)
    max_workers: int = Field(default=2, ge=1)
    network: Literal["none"] = "none"


# A union once a second backend exists; the ``kind`` field already selects it.
EnvironmentConfig = PodmanEnvironment
