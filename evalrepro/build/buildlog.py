"""Each layer's build time, where it is measured: the run's ``images/builds.json`` and
the cache's ``builds/<key>.build.json``.

A layer's build time is known only to the session that built it; a run that reuses the
layer later learns it from the cache's record, written when the layer was built (by
``lock`` and ``run`` alike). The report (``evalrepro.report.timing``) only reads them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from evalrepro import atomic
from evalrepro.build.images import ImageChain
from evalrepro.errors import UserError
from evalrepro.records.base import read_record
from evalrepro.records.image import BuildFailure, ImageRecord
from evalrepro.records.timing import ImageBuild, ImageBuilds, LayerBuild, ReusedImage

BUILDS_FILE = "images/builds.json"
#: In the cache: each layer's last build, by key.
LAYER_BUILDS_DIR = "builds"


def _layers(images: list[ImageChain | BuildFailure]) -> list[ImageRecord]:
    return [
        layer
        for image in images
        for layer in (image.layers if isinstance(image, ImageChain) else image.below)
    ]


def _layer_build_path(cache_dir: Path, key: str) -> Path:
    return cache_dir / LAYER_BUILDS_DIR / f"{key.removeprefix('sha256:')}.build.json"


def remember_builds(cache_dir: Path, images: list[ImageChain | BuildFailure]) -> None:
    """Keep in the cache what each layer built now took, for the runs that reuse it."""
    now = datetime.now(UTC)
    for layer in _layers(images):
        if not layer.built:
            continue
        record = LayerBuild(
            key=layer.key,
            layer=layer.layer,
            tag=layer.tag,
            seconds=layer.build_seconds,
            built_at=now,
        )
        atomic.write_text(
            _layer_build_path(cache_dir, layer.key), record.model_dump_json(indent=2) + "\n"
        )


def _recorded_build(cache_dir: Path | None, key: str) -> LayerBuild | None:
    if cache_dir is None:
        return None
    path = _layer_build_path(cache_dir, key)
    if not path.is_file():
        return None
    try:
        build = read_record(path, LayerBuild, limit=64 << 10)
    except UserError:
        return None  # a damaged cache record: the time is not known, nothing more
    return build if build.key == key else None


def record_builds(
    run_dir: Path, images: list[ImageChain | BuildFailure], cache_dir: Path | None = None
) -> None:
    """Add the layers built now to ``images/builds.json`` (each key once), and those found
    ready, with their build time as the cache (``cache_dir``) recorded it."""
    path = run_dir / BUILDS_FILE
    known = read_builds(run_dir)
    built = {build.key for build in known.builds}
    reused = {image.key: image for image in known.reused}
    new: list[ImageBuild] = []
    for layer in _layers(images):
        if layer.built and layer.key not in built:
            built.add(layer.key)
            new.append(
                ImageBuild(
                    key=layer.key, layer=layer.layer, tag=layer.tag, seconds=layer.build_seconds
                )
            )
        elif not layer.built and layer.key not in built and layer.key not in reused:
            earlier = _recorded_build(cache_dir, layer.key)
            reused[layer.key] = ReusedImage(
                key=layer.key,
                layer=layer.layer,
                tag=layer.tag,
                seconds=earlier.seconds if earlier else None,
                built_at=earlier.built_at if earlier else None,
            )
    # A layer this run built is its own time, even if an earlier session found it ready.
    kept = [image for key, image in reused.items() if key not in built]
    if new or kept != known.reused or not path.exists():
        record = ImageBuilds(builds=[*known.builds, *new], reused=kept)
        atomic.write_text(path, record.model_dump_json(indent=2) + "\n")


def read_builds(run_dir: Path) -> ImageBuilds:
    path = run_dir / BUILDS_FILE
    if not path.is_file():
        return ImageBuilds()
    try:
        return read_record(path, ImageBuilds)
    except UserError:
        # A report must not fail on a damaged timing record; it shows no build times.
        return ImageBuilds()
