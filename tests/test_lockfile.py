"""The committed lockfiles: the demo's lock reproduces, byte for byte and digest for digest.

``lockfiles/`` holds the demo's lockfile, its base image's package list and the lockfile
JSON Schema, all written by ``scripts/lock-demo`` (rootless, the mode CI runs in). Locking
the demo again must give the same experiment, image digests included; when it does not,
the failure says which layer moved and what usually moves it.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from rich.console import Console

from evalrepro.config.experiment import PACKAGE_DIR, compose
from evalrepro.digest import sha256_bytes
from evalrepro.pipeline import lock_experiment
from evalrepro.plan.lockfile import differences, read_lockfile
from evalrepro.records.lockfile import Lockfile
from evalrepro.run.backend import Backend
from tests.podman_support import cache_dir, needs_podman

LOCKFILES = Path(__file__).resolve().parent.parent / "lockfiles"
COMMITTED = LOCKFILES / "demo.lock.json"
BASE_PACKAGES = LOCKFILES / "demo.base-packages.txt"
REGENERATE = "regenerate lockfiles/ with scripts/lock-demo (rootless) if the change is expected"

#: What moves a layer's image digest while its build inputs (its key) stay the same.
WHY_DIGESTS_MOVE = {
    "base": "the Debian mirror published other package versions (same suite, mirror and "
    "package names)",
    "env": "PyPI served other files for the same pins (or a pin is missing), or pip wrote "
    "other bytes (another podman version or storage driver)",
    "history": "the demo repo's history export (evalrepro/demo/repos, repos.py) changed",
    "instance": "the tree export or the install command's output changed",
}


def explain(
    committed: Lockfile, fresh: Lockfile, old_packages: str | None, new_packages: str | None
) -> str:
    """Why ``fresh`` is not ``committed``: each difference, each moved layer, and why."""
    lines = [f"{d.kind}: {d.detail}" for d in differences(committed, fresh)]
    new_images = {image.key: image for image in fresh.environment.images}
    for image in committed.environment.images:
        new = new_images.get(image.key)
        where = f"{image.layer} layer {image.key[7:19]}"
        if new is None:
            lines.append(f"{where}: not in the new lockfile (its build inputs changed)")
        elif new.image_digest != image.image_digest:
            lines.append(
                f"{where}: image {image.image_digest[7:19]} became {new.image_digest[7:19]} "
                f"from the same inputs; likely cause: {WHY_DIGESTS_MOVE[image.layer]}"
            )
            if image.layer == "base":
                lines.append(_package_changes(old_packages, new_packages))
    if not lines:
        ours, theirs = committed.identity(), fresh.identity()
        moved = sorted(
            key for key in ours.keys() | theirs.keys() if ours.get(key) != theirs.get(key)
        )
        lines.append(f"identity differs in {', '.join(moved)}")
    return "\n".join(["the demo no longer locks to lockfiles/demo.lock.json:", *lines, REGENERATE])


def _package_changes(old: str | None, new: str | None) -> str:
    if old is None or new is None:
        return "  (no package list to compare: the cache holds none for the new base image)"
    before = dict(line.split("=", 1) for line in old.splitlines() if "=" in line)
    after = dict(line.split("=", 1) for line in new.splitlines() if "=" in line)
    changed = [
        f"{name} {before.get(name, '-')} -> {after.get(name, '-')}"
        for name in sorted(before.keys() | after.keys())
        if before.get(name) != after.get(name)
    ]
    return "  packages: " + ("; ".join(changed) or "the same list (other bytes)")


# --- the committed files, as files -----------------------------------------------------


def test_the_committed_schema_is_the_lockfile_models():
    assert (LOCKFILES / "lockfile.schema.json").read_text() == Lockfile.json_schema(), (
        "python -m evalrepro.plan.lockfile --schema > lockfiles/lockfile.schema.json"
    )


def test_the_committed_lockfile_reads_and_is_in_canonical_form():
    lockfile = read_lockfile(COMMITTED)
    assert COMMITTED.read_text() == lockfile.dumps()
    assert lockfile.experiment == "demo" and len(lockfile.trials) == 12


def test_the_committed_lockfile_holds_no_path_of_this_checkout():
    # Paths inside the package are ${pkg:...}: two checkouts lock to the same bytes, and
    # the config resolves to this checkout's package wherever it lives.
    text = COMMITTED.read_text()
    assert str(PACKAGE_DIR.parent) not in text
    lockfile = read_lockfile(COMMITTED)
    assert lockfile.config["dataset"]["instances"] == "${pkg:demo/instances.jsonl}"
    assert Path(lockfile.experiment_config().dataset.instances) == (
        PACKAGE_DIR / "demo" / "instances.jsonl"
    )


def test_the_committed_base_package_list_is_the_locked_one():
    (base,) = [i for i in read_lockfile(COMMITTED).environment.images if i.layer == "base"]
    assert sha256_bytes(BASE_PACKAGES.read_bytes()) == base.package_manifest_digest, REGENERATE


def test_a_moved_base_layer_is_explained_with_the_packages_that_moved():
    committed = read_lockfile(COMMITTED)
    data = json.loads(COMMITTED.read_text())
    for image in data["environment"]["images"]:
        if image["layer"] == "base":
            image["image_digest"] = "sha256:" + "1" * 64
    old = BASE_PACKAGES.read_text()
    new = old.replace("bash=5.2.15-2+b13", "bash=5.2.15-2+b14")
    text = explain(committed, Lockfile.model_validate(data), old, new)
    assert "base layer" in text and "Debian mirror published other package versions" in text
    assert "bash 5.2.15-2+b13 -> 5.2.15-2+b14" in text
    assert "demo__calc-1: base layer" in text  # the differences() line, per instance


# --- locking again --------------------------------------------------------------------------


def podman(test):
    for mark in needs_podman:
        test = mark(test)
    return test


@pytest.fixture(scope="module")
def locked_twice(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("locks")
    console = Console(file=io.StringIO())
    outputs = (folder / "first.lock.json", folder / "second.lock.json")
    for output in outputs:
        lock_experiment(
            compose(["+experiment=demo"]), console, output=output, cache_dir=cache_dir()
        )
    return outputs


@podman
def test_locking_twice_gives_the_same_bytes(locked_twice):
    first, second = locked_twice
    assert first.read_bytes() == second.read_bytes()
    assert str(PACKAGE_DIR.parent) not in first.read_text()


@podman
def test_locking_the_demo_again_gives_the_committed_lockfile(locked_twice):
    _assert_locks_to_the_committed_lockfile(locked_twice[0])


@podman
@pytest.mark.root_podman
@pytest.mark.skipif(os.geteuid() != 0, reason="root podman: scripts/test runs this as root")
def test_root_podman_locks_the_demo_to_the_committed_rootless_lockfile(locked_twice):
    # The committed lockfile is written rootless; root builds the same image bytes
    # (overlayfs's attributes are not content: build/layertar.py).
    _assert_locks_to_the_committed_lockfile(locked_twice[0])


def _assert_locks_to_the_committed_lockfile(lockfile: Path) -> None:
    committed, fresh = read_lockfile(COMMITTED), read_lockfile(lockfile)
    if fresh.identity() == committed.identity():
        return
    (base,) = [i for i in fresh.environment.images if i.layer == "base"]
    backend = Backend.open(fresh.experiment_config().environment, cache_dir())
    manifest = backend.builder.package_manifest(base.record())
    new_packages = manifest.read_text() if manifest else None
    pytest.fail(explain(committed, fresh, BASE_PACKAGES.read_text(), new_packages))
