"""Real builds at once: the demo's instance layers built by 2 workers are the layers 1
worker builds, digest for digest.

Each repo's instance layers are made new by an install command no layer had before (a
token per test run), so every one of them is built here: first with
``executor.max_workers=2``, then, after their images are removed, with 1. The base,
env and history layers are shared with the other container tests (built once).
"""

from __future__ import annotations

import time
import uuid

import pytest

from evalrepro.build.images import ImageChain
from evalrepro.plan.plan import build_plan
from evalrepro.run.backend import Backend
from tests.podman_support import cache_dir, demo_config, needs_podman

pytestmark = needs_podman
REPOS = ("demo/calc", "demo/textkit", "demo/ledger")


def instance_layers(workers: int, token: str) -> tuple[dict[str, tuple[str, bool]], float, Backend]:
    """Per instance layer tag: (image digest, built now); seconds of the plan."""
    installs = [f"dataset.specs[{repo}][1.0].install=echo {token}" for repo in REPOS]
    config = demo_config("demo", f"executor.max_workers={workers}", *installs)
    backend = Backend.open(config.environment, cache_dir())
    backend.check()
    started = time.monotonic()
    plan = build_plan(config, backend.builder, cache_dir())
    seconds = time.monotonic() - started
    layers = {}
    for image in plan.images:
        assert isinstance(image, ImageChain), image
        top = image.layers[-1]
        assert top.layer == "instance"
        layers[top.tag] = (top.image_digest, top.built)
    return layers, seconds, backend


@pytest.fixture
def token():
    return f"evalrepro-parallel-{uuid.uuid4().hex[:12]}"


def test_two_workers_build_the_instance_layers_one_worker_builds(token):
    two, two_seconds, backend = instance_layers(2, token)
    runtime = backend.runtime
    try:
        assert len(two) > 3 and all(built for _, built in two.values())
        runtime.podman("rmi", *two)  # type: ignore[attr-defined]
        one, one_seconds, _ = instance_layers(1, token)
        assert all(built for _, built in one.values())
        assert {tag: digest for tag, (digest, _) in one.items()} == {
            tag: digest for tag, (digest, _) in two.items()
        }
        print(f"{len(two)} instance layers: 2 workers {two_seconds:.1f} s, 1 {one_seconds:.1f} s")
    finally:
        runtime.podman("rmi", "--ignore", *two, check=False)  # type: ignore[attr-defined]
        backend.close()
