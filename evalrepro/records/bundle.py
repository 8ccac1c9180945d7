"""The index of a result bundle (``bundle.json``): what the bag holds and how its
reports were made. Writing and checking a bundle: ``evalrepro.publish.bundle``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from evalrepro.records.base import Record, unchanged

#: The payload's layout, relative to the bag's data/ folder.
RUN = "run"


class ReportSettings(BaseModel):
    """How the bundle's reports were made: ``verify`` makes them again with these."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    confidence: float = 0.95
    n_resamples: int = 10_000
    seed: int = 0


class BundledInput(BaseModel):
    """A file the lockfile names, stored by content under ``inputs/``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["dataset", "predictions", "build"]
    #: Where it came from: the config key (``dataset.instances``), or the pinned input
    #: (``deb libc6 2.36-9``).
    source: str
    #: Its file name where it came from.
    name: str
    #: Inside the payload: ``inputs/<sha256 hex>/<name>``, or for a build input
    #: ``build-inputs/<hex of its pin's digest>``.
    path: str
    #: Hex sha256 of its bytes.
    sha256: str
    size: int


class BundleIndex(Record):
    record: Literal["Bundle"] = "Bundle"
    #: 2: the signed attestation's envelope and the README are named here.
    schema_version: int = 2
    migrations = {1: unchanged}
    evalrepro_version: str
    experiment: str
    target_id: str
    #: The run directory inside the payload.
    run: str = RUN
    #: sha256 over the bytes of the run's lockfile.
    lockfile_sha256: str
    reports: ReportSettings
    inputs: list[BundledInput]
    #: The images' archives inside the payload, with --with-images: an OCI layout
    #: (``images.oci.tar``) and/or, for Docker-manifest images, ``images.docker.tar``.
    images: list[str] = []
    #: Every pinned build input is in ``build-inputs/`` (--with-inputs), not only the
    #: repo histories (--with-images).
    all_build_inputs: bool = False
    #: The attestation in a DSSE envelope signed with the author's key (``--sign``), inside
    #: the payload; None when the bundle is not signed (or is of schema 1).
    envelope: str | None = None
    #: The README for a reviewer without evalrepro, inside the payload (None: schema 1).
    readme: str | None = None
