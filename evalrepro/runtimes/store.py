"""An image store: where a runtime keeps the images its sandboxes start from.

Builders fill a store, bundles and distributed runs export from one and load into one,
and a runtime starts its sandboxes from one; none of them calls the store's program
(``podman``, ``docker``) itself: each runtime module implements this interface for its
own tool (``evalrepro.runtimes.podman_store``, ``evalrepro.runtimes.docker``).

It lives in ``build/`` because builders are the lowest stage that uses it: ``run/`` (the
runtimes that implement it, node image distribution) and ``publish/`` (archives, bundles)
stand above ``build/`` and may import it; a builder may not import ``run/``.

Image Ids are the config digest (what the lockfile pins, the same in every store that
loads the same bytes); ``image_id`` answers them as hex digits, without ``sha256:``.
"""

from __future__ import annotations

import shutil
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from evalrepro import PACKAGE_DIR
from evalrepro.errors import UserError


class StoreError(Exception):
    """A store command failed (a builder turns it into a build failure)."""


def backend_files() -> Path:
    """``backends/podman/`` of a checkout, or the copy a wheel carries: the builders'
    recipes (Containerfiles) and the sandboxes' fixed files (hosts, resolv.conf)."""
    for candidate in (
        PACKAGE_DIR / "backend_files" / "podman",
        PACKAGE_DIR.parent / "backends" / "podman",
    ):
        if (candidate / "containers.conf").is_file():
            return candidate
    raise UserError(f"evalrepro's podman files are missing (looked near {PACKAGE_DIR})")


def last_line(text: str) -> str:
    """The last non-empty line of a tool's output, cut to 300 characters."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


#: A one-shot container's exit codes that say it could not run at all (podman and docker
#: agree on them).
RUNTIME_FAILURES = {125: "runtime error", 126: "command not executable", 127: "command not found"}


class ImageStore(ABC):
    """The images one runtime can start sandboxes from."""

    #: The store's program, for messages ("podman's store").
    tool: ClassVar[str]
    #: Where the store may put scratch files (unpacked archives).
    cache_dir: Path

    # --- what is there ---------------------------------------------------------------

    @abstractmethod
    def ids(self) -> dict[str, str]:
        """Every tagged image, ``repository:tag`` -> Id (``sha256:<hex>``): one listing."""

    @abstractmethod
    def image_id(self, reference: str) -> str | None:
        """The Id (hex, no ``sha256:``) of the image a tag, Id or digest reference names."""

    @abstractmethod
    def inspect(self, reference: str) -> dict[str, Any] | None:
        """The store's record of an image (``Id``, ``Config``, ``RepoDigests``,
        ``RootFS.Layers``, ``History``), or None when it holds none by that name."""

    def layers(self, reference: str) -> list[str]:
        """The image's layers by diff id, base first."""
        found = self.inspect(reference)
        if found is None:
            raise StoreError(f"{self.tool} holds no image {reference}")
        return list((found.get("RootFS") or {}).get("Layers") or [])

    def history(self, reference: str) -> list[Any]:
        """The image config's history entries."""
        found = self.inspect(reference)
        if found is None:
            raise StoreError(f"{self.tool} holds no image {reference}")
        return found.get("History") or []

    @abstractmethod
    def manifest_types(self, ids: Sequence[str]) -> dict[str, str]:
        """Id (``sha256:<hex>``) -> the media type of its manifest in the store."""

    # --- names -----------------------------------------------------------------------

    @abstractmethod
    def tag(self, image: str, *names: str) -> None:
        """Give ``image`` (a reference or Id) each name; StoreError if it cannot."""

    @abstractmethod
    def untag(self, image: str, *names: str) -> None:
        """Take the names off ``image``; a name it does not have is no error."""

    @abstractmethod
    def remove(self, *references: str) -> None:
        """Remove the images (or names); one that is not there, or in use, stays: no error."""

    # --- in and out ------------------------------------------------------------------

    @abstractmethod
    def load(self, archive: Path) -> None:
        """Load every image of a ``docker-archive`` or ``oci-archive`` file."""

    @abstractmethod
    def load_from_archive(self, archive: Path, number: int) -> str:
        """Load the ``number``-th image of a multi-image docker-archive; its Id (hex)."""

    @abstractmethod
    def load_from_layout(self, layout: Path, name: str) -> str:
        """Load the image ``name`` of an unpacked OCI layout; its Id (hex)."""

    @abstractmethod
    def pull(self, reference: str, *, tls_verify: bool = True) -> str:
        """Pull from a registry (by digest: the store checks the manifest); its Id (hex)."""

    @abstractmethod
    def push(self, image: str, remote: str, *, tls_verify: bool = True) -> str:
        """Push ``image`` to a registry reference; the manifest digest the push reported."""

    @abstractmethod
    def export_layout(self, image_id: str, layout: Path, name: str) -> None:
        """Write the image (by Id) into the OCI layout folder ``layout`` under ``name``,
        its config blob byte for byte (so its Id is kept)."""

    @abstractmethod
    def save(self, references: Sequence[str], archive: Path) -> None:
        """Write the images into one multi-image docker-archive (config bytes kept)."""

    # --- building and looking inside -------------------------------------------------

    def build(
        self,
        context: Path,
        containerfile: Path,
        tag: str,
        *,
        log: Path,
        build_args: dict[str, str],
        network: bool,
        volumes: Sequence[tuple[str, str]] = (),
        omit_history: bool = False,
    ) -> int:
        """Build ``containerfile`` in ``context`` (``--timestamp 0``, no layer cache, no
        pull) as ``tag``; its output to ``log``; the exit code. Only a build with
        ``network`` reaches the host's network."""
        raise StoreError(f"{self.tool}'s store builds no images")

    @abstractmethod
    def run(
        self, image: str, argv: Sequence[str], *, volumes: Sequence[tuple[str, str]] = ()
    ) -> subprocess.CompletedProcess:
        """Run ``argv`` once in a container of ``image``, without network or privilege
        gain, read-only volumes ``(host, container)``; its output as text."""

    def remove_tree(self, path: Path) -> None:
        """Delete a folder a build used (some stores leave files of other owners)."""
        shutil.rmtree(path, ignore_errors=True)


def run_args(image: str, argv: Sequence[str], volumes: Sequence[tuple[str, str]] = ()) -> list[str]:
    """``run`` of a throwaway container that looks inside an image: no network, no pull,
    no new privileges, the volumes read-only (podman and docker take the same words)."""
    return [
        "run",
        "--rm",
        "--network",
        "none",
        "--pull",
        "never",
        "--security-opt",
        "no-new-privileges",
        *(f"--volume={host}:{inside}:ro" for host, inside in volumes),
        image,
        *argv,
    ]
