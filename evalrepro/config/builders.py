"""Builders' configs: how the image a trial runs in comes to exist (``environment.builder``).

One pydantic model per kind (a plugin of the ``evalrepro.builders`` group); each names its
implementation, imported only when a run opens the builder.
"""

from __future__ import annotations

import re
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class ContainerfileBuilderConfig(BaseModel):
    """Layers built by ``podman build`` from evalrepro's Containerfiles, the base by
    mmdebstrap."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["containerfile"] = "containerfile"

    implementation: ClassVar[str] = "evalrepro.build.containerfile:ContainerfileBuilder"


class NixBuilderConfig(BaseModel):
    """Images built by Nix from inputs pinned by hash (no nixpkgs), loaded into podman."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["nix"] = "nix"

    implementation: ClassVar[str] = "evalrepro.build.nix:NixBuilder"
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


class AdapterConfig(BaseModel):
    """A thin layer of evalrepro's on each pulled image, for images made the way
    SWE-bench's are (see ``evalrepro.build.image``): ``/testbed`` given to the test user,
    the harness's git store copied from ``/testbed/.git``, the test user ``tester`` (uid
    1000) added, and the Python environment the tests run in put first on the
    test command's PATH (as ``/opt/venv``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The prefix of the environment the tests run in (its ``bin/python``): SWE-bench's
    #: conda env ``testbed``. Its ``bin`` comes first on the test command's PATH, as
    #: ``conda activate testbed`` puts it (the env's activation scripts are not run).
    python_env: str = "/opt/miniconda3/envs/testbed"

    @field_validator("python_env")
    @classmethod
    def _plain_absolute_path(cls, value: str) -> str:
        # It is written into a shell command of the layer's build: a plain path only.
        if not re.fullmatch(r"(/[A-Za-z0-9._+-]+)+", value) or "/.." in value:
            raise ValueError(
                f"{value!r} is not a plain absolute path (letters, digits, . _ + - and /)"
            )
        return value


class PrebuiltImageConfig(BaseModel):
    """Images someone else built, pulled by digest (e.g. SWE-bench's published images).

    Without ``adapt``, each image is used as is: it must hold what the trial supervisor
    needs (see ``evalrepro.build.image``): the tree at ``/testbed`` owned by uid 1000, the
    harness's git store at ``/opt/evalrepro/repo.git``, ``/usr/bin/python3``, git, patch.
    With ``adapt``, a layer of evalrepro's on each image makes it so.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["image"] = "image"

    implementation: ClassVar[str] = "evalrepro.build.image:PrebuiltImageBuilder"
    #: Instance id -> its image, pinned by manifest digest, with its registry named:
    #: ``registry.example/name@sha256:<64 hex>`` (no tag; a short name is refused, since
    #: machines resolve short names differently).
    images: dict[str, str] = Field(default_factory=dict)
    #: Verify TLS when pulling (a registry on 127.0.0.1 without TLS needs false).
    tls_verify: bool = True
    #: The adapter layer for images made the way SWE-bench's are (root's ``/testbed``, no
    #: harness store, a conda env): ``adapt: {}`` for SWE-bench's own layout. null: the
    #: images are used as they are.
    adapt: AdapterConfig | None = None

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


class FakeBuilderConfig(BaseModel):
    """Image records whose digests are functions of their inputs (the fake environment)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["fake"] = "fake"

    implementation: ClassVar[str] = "evalrepro.build.fake:FakeBuilder"


class RecordedBuilderConfig(BaseModel):
    """One record, ``recorded:unknown``, for the image another harness ran in."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["recorded"] = "recorded"

    implementation: ClassVar[str] = "evalrepro.build.recorded:RecordedBuilder"
