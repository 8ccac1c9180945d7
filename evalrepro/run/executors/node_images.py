"""How a node of a distributed run comes to hold the run's images (``executor.images``).

Every image of the lockfile must be in the node's podman store under its tag with its
locked Id before the node takes an attempt. Where the missing ones come from:

- ``store``: nowhere; the node's store must hold them (the same machine, or nodes that
  built them from the lockfile's pins);
- ``build``: built on the node by the environment's builder from the lockfile's pins
  (the builder rebuilds exactly what it pinned; the dataset's repo sources as the config
  names them, which the node must reach), into the node's own cache; a layer whose
  digest differs from the lockfile's refuses the node, naming the layer and the input
  that differs (same inputs, other bytes: the build is not reproducible there);
- ``archive``: the archives of a folder every node reads (``images.oci.tar`` /
  ``images.docker.tar``), written once by the submitter, loaded and checked by
  :func:`evalrepro.build.image_archive.load_images`;
- ``registry``: pushed once by the submitter to a registry the user names, pulled on each
  node by the manifest digest the push reported, tagged with the locked tag, and its Id
  checked against the lockfile (a registry that serves other bytes cannot pass: the pull
  verifies the manifest by its digest, the Id is the config's digest).

What goes wrong is one problem line per image; a node with problems takes no attempts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalrepro.errors import UserError
from evalrepro.records.image import BuildFailure
from evalrepro.records.lockfile import LockedImage
from evalrepro.records.testspec import TestSpec
from evalrepro.runtimes.base import Runtime
from evalrepro.runtimes.store import StoreError


@dataclass(frozen=True)
class NodeBuild:
    """What a node needs to build the run's images itself (``source: build``)."""

    #: The run's environment config (its builder) and dataset config (its repo sources).
    environment: Any
    dataset: Any
    #: The specs of the instances the run's trials need.
    specs: list[TestSpec]
    #: Each of those instances' locked chain of layers, base first.
    chains: dict[str, list[LockedImage]]


def store_images(images: Sequence[LockedImage]) -> list[LockedImage]:
    """The images that live in podman's store by tag (the Nix builder's layer records
    travel inside the image above them)."""
    return [image for image in images if image.tag.startswith("localhost/")]


def push_images(
    runtime: Runtime, images: Sequence[LockedImage], registry: str, *, tls_verify: bool
) -> dict[str, str]:
    """Push each store image to ``registry``; its tag -> the reference to pull it by
    (``registry/name@sha256:<manifest digest>``)."""
    store = runtime.image_store()
    references = {}
    for image in store_images(images):
        name, _, key = image.tag.removeprefix("localhost/").partition(":")
        remote = f"{registry.rstrip('/')}/{name}:{key}"
        try:
            digest = store.push(image.tag, remote, tls_verify=tls_verify)
        except StoreError as error:
            raise UserError(f"cannot push {image.tag} to {registry}: {error}") from None
        references[image.tag] = f"{remote.rsplit(':', 1)[0]}@{digest}"
    return references


def pull_images(
    runtime: Runtime, images: Sequence[LockedImage], references: dict[str, str], tls: bool
) -> list[str]:
    """Pull each image by its reference, name it by its Id; the problems, one per image."""
    from evalrepro.build.image_archive import loaded_name

    store = runtime.image_store()
    problems = []
    for image in images:
        reference = references.get(image.tag)
        if reference is None:
            problems.append(f"{image.tag}: not pushed to the registry")
            continue
        try:
            store.pull(reference, tls_verify=tls)
            # Under a name of its Id's: the node's own tags stay as they are.
            store.tag(reference, loaded_name(image))
        except StoreError as error:
            problems.append(f"{image.tag}: cannot pull {reference}: {error}")
            continue
        found = store.ids().get(loaded_name(image))
        if found != image.image_digest:
            problems.append(
                f"{image.tag}: pulled Id {found}, the lockfile says {image.image_digest}"
            )
    return problems


def build_here(runtime: Runtime, images: Sequence[LockedImage], build: NodeBuild) -> list[str]:
    """Build the run's images on this node from the lockfile's pins; the problems, one per
    instance whose image does not come out as the lockfile says."""
    from evalrepro.build import open_builder
    from evalrepro.cache import default_cache_dir
    from evalrepro.plan.plan import build_images

    cache = default_cache_dir()
    try:
        builder = open_builder(build.environment, runtime, cache, 1)
        builder.check()
        built = build_images(
            build.dataset, builder, cache, build.specs, [image.record() for image in images]
        )
    except UserError as error:
        return [f"cannot build the images here: {error}"]
    problems = build_problems(build.chains, built)
    if not problems:
        problems = [
            f"{image.tag}: built here, yet not in the store with Id {image.image_digest}"
            for image in runtime.missing_images(images)
        ]
    return problems


def build_problems(locked: dict[str, list[LockedImage]], built: dict[str, Any]) -> list[str]:
    """Each instance whose image, built here, is not its locked chain: the first layer
    that differs and why (the lockfile's side first)."""
    from evalrepro.plan.lockfile import chain_difference

    problems = []
    for instance_id, chain in sorted(locked.items()):
        here = built.get(instance_id)
        if here is None:
            problems.append(f"{instance_id}: this node built no image for it")
        elif isinstance(here, BuildFailure):
            problems.append(
                f"{instance_id}: the {here.layer} layer does not build here ({here.reason})"
            )
        else:
            ours = [LockedImage.of(record) for record in here.layers]
            detail = chain_difference(chain, ours)
            if detail is not None:
                problems.append(
                    f"{instance_id}: the image built here is not the lockfile's "
                    f"(the lockfile's first): {detail}"
                )
    return problems


def prepare(
    runtime: Runtime,
    images: Sequence[LockedImage],
    source: str,
    *,
    archive: str | None = None,
    references: dict[str, str] | None = None,
    build: NodeBuild | None = None,
    tls_verify: bool = True,
) -> list[str]:
    """Make this node's store hold ``images``; the problems (none: it may take attempts)."""
    missing = runtime.missing_images(images)
    if not missing:
        return []
    if source == "archive" and archive is not None:
        from evalrepro.build.image_archive import load_images

        files = sorted(Path(archive).glob("images.*.tar"))
        if not files:
            return [f"no images.*.tar in {archive}"]
        try:
            return load_images(runtime.image_store(), files, images)
        except UserError as error:
            return [str(error)]
    if source == "registry" and references is not None:
        return pull_images(runtime, missing, references, tls_verify)
    if source == "build" and build is not None:
        return build_here(runtime, images, build)
    shown = ", ".join(f"{image.tag} ({image.image_digest[:19]})" for image in missing[:3])
    more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
    return [f"its store lacks {shown}{more}"]
