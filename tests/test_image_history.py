"""The images the Containerfile builder makes are images a user can build on.

Their history is evalrepro's own (layertar.NORMALISATION): the parent's entries, then one
naming the layer's tag, so that it lists one non-empty entry per layer, as buildah
expects of any image it builds on, and names nothing of the store it was built in.
"""

from __future__ import annotations

import json
import uuid

import pytest

from evalrepro.build.images import ImageChain
from evalrepro.build.layertar import EPOCH
from evalrepro.plan.plan import build_plan
from evalrepro.run.backend import Backend
from tests.podman_support import cache_dir, demo_config, needs_podman

pytestmark = needs_podman


@pytest.fixture(scope="module")
def built():
    """(runtime, the demo calc-1 instance's chain), built by the demo's builder if missing."""
    config = demo_config("demo", "dataset.instance_ids=[demo__calc-1]")
    backend = Backend.open(config.environment, cache_dir())
    backend.check()
    (planned,) = build_plan(config, backend.builder, cache_dir()).trials
    assert isinstance(planned.image, ImageChain), planned.image
    return backend.runtime, planned.image


def inspect(runtime, image: str, field: str):
    return json.loads(
        runtime.podman("image", "inspect", "--format", f"{{{{json {field}}}}}", image).stdout
    )


def test_every_layer_has_one_history_entry_and_each_layer_above_the_base_names_its_tag(built):
    runtime, chain = built
    for layer in chain.layers:
        history = inspect(runtime, layer.image_digest, ".History")
        layers = inspect(runtime, layer.image_digest, ".RootFS.Layers")
        assert sum(not entry.get("empty_layer") for entry in history) == len(layers)
    for parent, layer in zip(chain.layers, chain.layers[1:], strict=False):
        history = inspect(runtime, layer.image_digest, ".History")
        assert history[:-1] == inspect(runtime, parent.image_digest, ".History")
        assert history[-1] == {"created": EPOCH, "created_by": layer.tag}


def test_a_user_builds_on_an_instance_image_in_several_steps(built, tmp_path):
    runtime, chain = built
    (tmp_path / "Containerfile").write_text(
        f"FROM {chain.image.image_digest}\nRUN true\nRUN true\nLABEL evalrepro.test=steps\n"
    )
    name = f"localhost/evalrepro-test-steps:{uuid.uuid4().hex[:12]}"
    try:
        done = runtime.podman("build", "--pull=never", "--tag", name, str(tmp_path), check=False)
        assert done.returncode == 0, done.stderr
        assert (
            len(inspect(runtime, name, ".RootFS.Layers"))
            == len(inspect(runtime, chain.image.image_digest, ".RootFS.Layers")) + 2
        )
    finally:
        runtime.podman("rmi", "--force", name, check=False)
