"""Docker's image store exports: a ``docker save``, re-packed as the docker-archive podman
writes, whose bytes load back into podman's store and into docker's with the locked Ids.

Real docker (root's daemon; skipped, saying why, where none is reachable) and real
podman: the demo's calc-1 chain (base, env, history, instance), brought into docker's
store as a docker run brings it, exported from there as a bundle exports a docker run's
images, then loaded into an empty podman store of its own and into docker's store
emptied of the chain.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from rich.console import Console

from evalrepro.build.image_archive import (
    DOCKER_ARCHIVE,
    check_docker_archive,
    export_images,
    load_images,
    loaded_name,
    ref_name,
)
from evalrepro.digest import sha256_file
from evalrepro.pipeline import plan_and_lock
from evalrepro.runtimes.podman import PodmanRuntime
from tests.podman_support import cache_dir, demo_config
from tests.test_image_archive import empty_store
from tests.test_runtime_conformance import _no_docker, store_names


@pytest.mark.docker
@pytest.mark.xdist_group("podman")  # it builds in podman's store
@pytest.mark.skipif(_no_docker is not None, reason=_no_docker or "")
def test_an_export_from_dockers_store_loads_into_podman_and_docker_with_the_locked_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = demo_config("demo", "dataset.instance_ids=[demo__calc-1]", "environment=docker")
    backend, _, lockfile = plan_and_lock(config, Console(file=io.StringIO()), cache_dir())
    runtime = backend.runtime
    chain = list(lockfile.environment.images)
    # What a bundle of a docker run does first: its images into docker's own store.
    assert runtime.missing_images(chain) == []
    store = runtime.image_store()
    assert store.tool == "docker"

    (archive,) = export_images(store, chain, tmp_path / "one")
    assert archive.name == DOCKER_ARCHIVE
    bad, entries, members = check_docker_archive(archive)
    assert bad == set(), "every layer and config is named by its own digest"
    by_config = {entry["Config"]: entry for entry in entries}
    for image in chain:
        entry = by_config[f"{image.image_digest.removeprefix('sha256:')}.json"]
        assert entry["RepoTags"] == [ref_name(image)]
        assert set(entry["Layers"]) <= members
    # One chain: the instance's layers are every layer of the archive, each there once.
    instance = next(i for i in chain if i.layer == "instance")
    top = by_config[f"{instance.image_digest.removeprefix('sha256:')}.json"]["Layers"]
    assert {layer for entry in entries for layer in entry["Layers"]} == set(top)
    assert len(top) == len(set(top)) == len(store.layers(instance.image_digest))
    (again,) = export_images(store, list(reversed(chain)), tmp_path / "two")
    # A function of the images alone (compared by hash: a byte diff of 250 MB is no message).
    assert sha256_file(again) == sha256_file(archive), "two exports of the same images differ"

    # Into podman: an empty store of its own (the shared one is left alone).
    with empty_store(tmp_path / "podman", monkeypatch):
        podman = PodmanRuntime(lockfile.experiment_config().environment, cache_dir())
        podman.check()
        assert podman.image_ids() == {}
        assert load_images(podman.image_store(), archive, chain) == []
        assert podman.image_ids() == {loaded_name(i): i.image_digest for i in chain}

    # Into docker: its store without the chain, then loaded back.
    for image in reversed(chain):  # the instance first: a parent goes once nothing uses it
        store.remove(image.image_digest.removeprefix("sha256:"), *store_names(store, image))
    assert [store.image_id(image.image_digest) for image in chain] == [None] * len(chain)
    assert load_images(store, archive, chain) == []
    assert [f"sha256:{store.image_id(image.image_digest)}" for image in chain] == [
        image.image_digest for image in chain
    ]
    backend.close()


def test_a_layer_docker_saved_with_other_bytes_than_its_diff_id_is_refused(
    tmp_path: Path,
) -> None:
    """What ``docker save`` wrote is checked while it is re-packed: a layer whose bytes are
    not its config's diff id is no layer of that image (it would load as another)."""
    from evalrepro.runtimes.docker import repack_docker_save
    from evalrepro.runtimes.store import StoreError

    layer = tmp_path / "layer.tar"
    with tarfile.open(layer, "w") as tar:
        data = b"hello\n"
        info = tarfile.TarInfo("hello.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    claimed = "0" * 64
    config = json.dumps({"rootfs": {"type": "layers", "diff_ids": [f"sha256:{claimed}"]}})
    manifest = [{"Config": "c0nf.json", "Layers": ["v1/layer.tar"]}]
    saved = tmp_path / "saved.tar"
    with tarfile.open(saved, "w") as tar:
        for name, blob in (
            ("c0nf.json", config.encode()),
            ("v1/layer.tar", layer.read_bytes()),
            ("manifest.json", json.dumps(manifest).encode()),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    target = tmp_path / "out.tar"
    with pytest.raises(StoreError, match=f"layer {claimed[:12]} with other bytes"):
        repack_docker_save(saved, target)
    assert not target.exists()
