"""Images as evalrepro records them, whatever built them.

A builder (``evalrepro.build``) turns a TestSpec into a chain of image layers and owns
the record of each: what went into it (``PinnedInput``: a Debian package, a wheel, a
tree, a recipe, each by name, version and digest), the key those inputs give, and the
digest of what came out (the image Id podman reports). The lockfile, ``verify`` and a
run store and compare these records without knowing a builder's layer names or tags: a
difference between two images is named by the first input that differs.
"""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict

from evalrepro.digest import sha256_json
from evalrepro.records.image import ImageRecord, PinnedInput


def package_manifest_name(key: str) -> str:
    """Where a run keeps a layer's package list: ``images/<key digits>.packages.txt``."""
    return f"images/{key.removeprefix('sha256:')[:16]}.packages.txt"


def layer_key(builder: str, layer: str, inputs: list[PinnedInput], parent: str | None) -> str:
    """The key of a layer: its builder, name, inputs and the key below it."""
    return sha256_json(
        {
            "builder": builder,
            "layer": layer,
            "parent": parent,
            "inputs": [i.identity() for i in inputs],
        }
    )


def setting_input(name: str, value: object) -> PinnedInput:
    """A build setting as an input: its value is its version, its digest canonical JSON."""
    shown = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return PinnedInput(kind="setting", name=name, version=shown or "", digest=sha256_json(value))


def inputs_digest(inputs: list[PinnedInput]) -> str:
    return sha256_json([i.identity() for i in inputs])


class ImageChain(BaseModel):
    """The layers of one instance's image, base first."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    layers: list[ImageRecord]

    @property
    def image(self) -> ImageRecord:
        return self.layers[-1]
