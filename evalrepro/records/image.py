"""An image layer as its builder records it: the pinned inputs that go in, what comes out,
and a layer that could not be built. The builders (``evalrepro.build``) make them; the
lockfile holds them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer


class PinnedInput(BaseModel):
    """One input of an image layer, pinned: what it is, and the digest of its bytes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: What kind of input: "deb", "wheel", "tree", "history", "recipe", "setting", ...
    kind: str
    name: str
    version: str = ""
    #: "sha256:<hex>" over the input's bytes (a file) or canonical JSON (a setting).
    digest: str
    #: Where a machine with internet fetches it (a URL), if anywhere.
    source: str = ""
    #: The registry's Subresource Integrity string of the file (an npm tarball's
    #: ``sha512-<base64>``), checked beside the digest; None (and not written) for the
    #: kinds that have none.
    integrity: str | None = None

    @model_serializer(mode="wrap")
    def _without_absent_integrity(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Inputs without one are written (and digested) as before the field existed.
        data = handler(self)
        if isinstance(data, dict) and data.get("integrity", "") is None:
            del data["integrity"]
        return data

    def identity(self) -> dict[str, str]:
        """What the input is, without where it came from: the same bytes from another
        mirror or registry are the same input."""
        return self.model_dump(mode="json", exclude={"source"})

    @property
    def label(self) -> str:
        return f"{self.kind} {self.name}" + (f" {self.version}" if self.version else "")


class ImageRecord(BaseModel):
    """One built (or found) image layer, as the lockfile and the trial record hold it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The builder kind that made it ("containerfile", "nix", "image").
    builder: str
    #: The builder's name for the layer ("base", "env", ...): shown, never interpreted.
    layer: str
    #: sha256 over the canonical JSON of builder, layer, inputs (by identity: not their
    #: source) and the parent's key.
    key: str
    #: sha256 over the canonical JSON of the inputs alone (by identity).
    inputs_digest: str
    inputs: list[PinnedInput]
    #: How the runtime names the image (a podman tag or reference).
    tag: str
    parent_key: str | None
    #: The image's config digest (``podman image inspect {{.Id}}``), stable across stores.
    image_digest: str
    #: True when this run built the layer; False when it was already there.
    built: bool = False
    #: How long this run's build of the layer took (0 when it was already there).
    build_seconds: float = 0.0
    #: sha256 over the installed package list (name=version lines), where one is kept.
    package_manifest_digest: str | None = None


class BuildFailure(BaseModel):
    """A layer that could not be built: an infrastructure error of every trial needing it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    builder: str = ""
    layer: str
    key: str
    reason: str
    build_log: str | None = None
    #: The layers below it, found or built (a report counts them as reused or built).
    below: list[ImageRecord] = []
