"""What a builder is: how the image a trial runs in comes to exist.

``prepare(specs, checkouts, locked)`` builds or finds every instance's image, layer by
layer, and returns each instance's ``ImageChain`` (records of what went in and what came
out) or the ``BuildFailure`` that makes its trials infrastructure errors. ``locked`` is
the image records of a lockfile being run again: a builder that pins its inputs builds
exactly those, and a layer that can no longer be had is a failure naming the input.
A builder puts its images into its runtime's build store (an
:class:`~evalrepro.runtimes.store.ImageStore`), never calling the store's tool itself.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from evalrepro.build.images import ImageChain
from evalrepro.errors import UserError
from evalrepro.records.image import BuildFailure, ImageRecord
from evalrepro.records.testspec import TestSpec
from evalrepro.runtimes.store import ImageStore
from evalrepro.sources.checkout import LocalCheckout

if TYPE_CHECKING:  # a builder fills a runtime's store; it imports no runtime
    from evalrepro.runtimes.base import Runtime


class Builder(ABC):
    kind: ClassVar[str]
    #: The runtime whose image store the builder fills.
    runtime: Runtime
    #: The runtime kinds whose image store this builder can fill (docker's: built in
    #: podman's store, brought over by the docker runtime, the same bytes and Id).
    runtimes: ClassVar[tuple[str, ...]] = ("podman", "docker")
    #: Whether its images are built from the instances' repo histories (the plan
    #: resolves the repo sources only for a builder that needs them).
    needs_sources: ClassVar[bool] = True

    def __init__(
        self, config: Any, runtime: Runtime, cache_dir: Path, *, concurrency: int = 1
    ) -> None:
        """``config``: the environment's; ``concurrency``: independent layers built at once
        (the executor's budget)."""
        self.config = config
        self.runtime = runtime
        self.cache_dir = cache_dir
        self.concurrency = concurrency
        self.open()

    def open(self) -> None:  # noqa: B027 - optional hook
        """The builder's own state, once its settings are there."""

    @property
    def store(self) -> ImageStore:
        """The image store this builder builds in (see ``Runtime.build_store``)."""
        store = self.runtime.build_store()
        if store is None:
            raise UserError(f"the {self.runtime.kind} runtime has no image store to build in")
        return store

    def check(self) -> None:  # noqa: B027 - optional hook
        """The builder can work here (its tools are installed); else UserError."""

    @abstractmethod
    def prepare(
        self,
        specs: list[TestSpec],
        checkouts: dict[str, LocalCheckout],
        locked: list[ImageRecord] | None = None,
    ) -> dict[str, ImageChain | BuildFailure]: ...

    def missing(self, records: list[ImageRecord]) -> list[ImageRecord]:
        """The records whose image (its recorded Id, under any name: trials run the Id)
        the runtime does not hold (one listing of the store: the warm check before a run)."""
        ids = set(self.runtime.image_ids().values())
        return [record for record in records if record.image_digest not in ids]

    def package_manifest(self, base: ImageRecord) -> Path | None:
        """The base layer's installed-package list, if the builder keeps one."""
        return None
