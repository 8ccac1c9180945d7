"""What a backend is: it builds the images trials need and runs one attempt at a time.

The lifecycle, in the order the executor calls it:

1. ``check()``: the runtime is usable here (binaries, user namespaces); else UserError;
2. ``prepare(specs, checkouts)`` (``checkouts``: instance id -> the LocalCheckout of its
   source): build or find every image, layer by layer; returns the
   image chain of each instance, or the build failure that makes its trials
   infrastructure errors;
3. ``remove_leftovers(prefix)``: remove the containers of an earlier, killed session;
4. ``run(request)``, once per attempt, possibly from several threads at once: start the
   supervisor in a sandbox of the image, read its stream, return its report;
5. ``close()``: remove whatever the backend left running.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from evalrepro.repos import LocalCheckout
from evalrepro.supervision import SupervisorReport
from evalrepro.testspec import TestSpec

Layer = Literal["base", "env", "history", "instance"]


class ImageRecord(BaseModel):
    """One built (or found) image layer, as the lockfile and the trial record hold it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    layer: Layer
    #: sha256 over the canonical JSON of the layer's build inputs and its parent's key.
    key: str
    #: sha256 over the canonical JSON of the build inputs alone (no parent).
    inputs_digest: str
    tag: str
    parent_key: str | None
    #: The image's config digest (``podman image inspect {{.Id}}``), stable across stores.
    image_digest: str
    #: True when this run built the layer; False when it was already there.
    built: bool
    #: How long this run's build of the layer took (0 when it was already there).
    build_seconds: float = 0.0
    #: base layer only: sha256 over the installed package list (name=version lines).
    package_manifest_digest: str | None = None


class ImageChain(BaseModel):
    """The layers of one instance's image, base first."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    layers: list[ImageRecord]

    @property
    def image(self) -> ImageRecord:
        return self.layers[-1]


class BuildFailure(BaseModel):
    """A layer that could not be built: an infrastructure error of every trial needing it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    layer: Layer
    key: str
    reason: str
    build_log: str | None = None
    #: The layers below it, found or built (a report counts them as reused or built).
    below: list[ImageRecord] = []


@dataclass(frozen=True)
class AttemptRequest:
    """One sandbox run: ``attempt_dir`` holds program.json, patch.diff and test.patch.

    The runtime writes ``test_output.txt`` (from the supervisor's stream) and
    ``runtime.log`` (its own diagnostics) there.
    """

    image_tag: str
    attempt_dir: Path
    name: str
    #: Seconds the tests may run (the supervisor enforces it; the host has a backstop).
    timeout: float
    #: Bytes of test output the supervisor lets through (bounds the host's reading).
    output_limit: int


@dataclass(frozen=True)
class AttemptRun:
    """What the runtime reports about one sandbox run."""

    report: SupervisorReport
    #: Each limit and how (or whether) this runtime enforced it.
    limits: dict[str, str]


class Backend(ABC):
    kind: ClassVar[str]

    @abstractmethod
    def check(self) -> None: ...

    @abstractmethod
    def prepare(
        self, specs: list[TestSpec], checkouts: dict[str, LocalCheckout]
    ) -> dict[str, ImageChain | BuildFailure]: ...

    @abstractmethod
    def run(self, request: AttemptRequest) -> AttemptRun: ...

    def describe(self) -> dict[str, str]:
        """Facts about the runtime that a reader of the run needs (mode, versions)."""
        return {"kind": self.kind}

    def package_manifest(self, base: ImageRecord) -> Path | None:
        """The base layer's installed-package list, if the backend keeps one."""
        return None

    def remove_leftovers(self, prefix: str) -> list[str]:
        """Remove containers named ``prefix...`` that a killed run left behind; their names.

        A run killed with SIGKILL cannot stop its containers: they run on (a looping patch
        forever) until the next session in the same run directory removes them.
        """
        return []

    def close(self) -> None:  # noqa: B027 - optional hook
        """Remove anything left running; the default has nothing to do."""
