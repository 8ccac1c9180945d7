"""The Containerfile builder builds exactly the pinned .debs and wheels of a lockfile.

A lock pins every Debian package of the base layer and every wheel of the env layers;
locking again from that lockfile (another cache, so every file is fetched again by hash)
builds the same base image Id without resolving anything; an edited pin is refused,
naming the package; ``differences`` names the edited pin.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from evalrepro.build import debian, wheels
from evalrepro.errors import UserError
from evalrepro.pipeline import lock_experiment
from evalrepro.plan.lockfile import differences, input_differences, read_lockfile
from evalrepro.records.lockfile import Lockfile
from tests.podman_support import demo_config, needs_podman

pytestmark = needs_podman
#: One instance with wheels (calc) keeps the lock to one base, one env, one instance.
SELECTION = "dataset.instance_ids=[demo__calc-1]"
CONTAINERS_CONF = Path(__file__).resolve().parents[1] / "backends" / "podman" / "containers.conf"


def _lock(output: Path, cache: Path) -> Lockfile:
    console = Console(file=io.StringIO(), width=200)
    return lock_experiment(demo_config("demo", SELECTION), console, output=output, cache_dir=cache)


def _layer(lock: Lockfile, name: str):
    return next(image for image in lock.environment.images if image.layer == name)


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Lockfile]:
    where = tmp_path_factory.mktemp("pins-first")
    path = where / "demo.lock.json"
    return path, _lock(path, where / "cache")


def _edited(lockfile: Path, target: Path, kind: str, name: str, **changes: str) -> Path:
    """``lockfile`` with the inputs ``kind name`` changed (their layers' keys as they were)."""
    data = json.loads(lockfile.read_text())
    for image in data["environment"]["images"]:
        for item in image["inputs"]:
            if item["kind"] == kind and item["name"] == name:
                item.update(changes)
    target.write_text(json.dumps(data, indent=2))
    return target


def test_the_lockfile_pins_every_deb_and_wheel(first: tuple[Path, Lockfile]) -> None:
    _, lock = first
    base, env = _layer(lock, "base"), _layer(lock, "env")
    debs = {i.name: i for i in base.inputs if i.kind == "deb"}
    assert {"libc6", "python3", "git", "patch", "apt", "base-files"} <= debs.keys()
    assert all(i.digest.startswith("sha256:") and "/pool/main/" in i.source for i in debs.values())
    found = {i.name: i.version for i in env.inputs if i.kind == "wheel"}
    assert found == {
        "pytest": "8.3.4",
        "iniconfig": "2.3.1",
        "packaging": "26.4",
        "pluggy": "1.7.0",
    }
    assert all(i.source.endswith(".whl") for i in env.inputs if i.kind == "wheel")


def test_a_lockfile_rebuilds_its_base_to_the_recorded_digest_from_its_pins(
    first: tuple[Path, Lockfile], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, lock = first
    again = tmp_path / "demo.lock.json"
    again.write_bytes(path.read_bytes())

    # Nothing is resolved again: the pins are the lockfile's.
    def no_resolving(*args: object, **kwargs: object) -> None:
        raise AssertionError("resolved again")

    monkeypatch.setattr(debian, "resolve", no_resolving)
    monkeypatch.setattr(wheels, "resolve_wheels", no_resolving)
    # An empty image store of its own (the shared one, which other tests use meanwhile,
    # is left alone) and another cache: every .deb and wheel is fetched again, checked
    # by hash, and every layer is built again.
    store = tmp_path / "store"
    conf = tmp_path / "config" / "containers" / "storage.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text(
        f'[storage]\ndriver = "overlay"\ngraphroot = "{store}/graph"\nrunroot = "{store}/run"\n'
    )
    # Rootless podman reads $XDG_CONFIG_HOME/containers/storage.conf (and ignores the
    # graphroot of a CONTAINERS_STORAGE_CONF); root reads that variable.
    if os.geteuid() == 0:
        monkeypatch.setenv("CONTAINERS_STORAGE_CONF", str(conf))
    else:
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    try:
        rebuilt = _lock(again, tmp_path / "cache")
        listed = subprocess.run(
            ["podman", "images", "--format", "{{.Repository}}:{{.Tag}}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        # Built in the empty store, not found in the shared one.
        assert {_layer(lock, "base").tag, _layer(lock, "env").tag} <= set(listed)
    finally:
        # Rootless, the store holds files of sub-uids: removed inside the user namespace.
        subprocess.run(["podman", "unshare", "rm", "-rf", str(store)], capture_output=True)
    for layer in ("base", "env"):
        one, two = _layer(lock, layer), _layer(rebuilt, layer)
        assert (two.key, two.image_digest) == (one.key, one.image_digest), layer
    assert differences(lock, rebuilt) == []


@pytest.mark.parametrize(
    ("kind", "name", "change", "message"),
    [
        ("deb", "patch", {"version": "0.1-1"}, r"Debian package patch is pinned as 0\.1-1"),
        (
            "deb",
            "patch",
            {"digest": "sha256:" + "0" * 64},
            r"Debian package patch \S+ does not match its pin",
        ),
        (
            "wheel",
            "pluggy",
            {"digest": "sha256:" + "0" * 64},
            r"wheel pluggy 1\.7\.0: the file at \S+ has sha256",
        ),
    ],
)
def test_an_edited_pin_is_refused_naming_the_package(
    first: tuple[Path, Lockfile],
    tmp_path: Path,
    kind: str,
    name: str,
    change: dict[str, str],
    message: str,
) -> None:
    path, lock = first
    edited = _edited(path, tmp_path / "demo.lock.json", kind, name, **change)
    with pytest.raises(UserError, match=message):
        _lock(edited, tmp_path / "cache")
    # And the difference is named by the pin.
    layer = "base" if kind == "deb" else "env"
    theirs = _layer(read_lockfile(edited, checked=False), layer)
    (found,) = input_differences(_layer(lock, layer).inputs, theirs.inputs)
    if "version" in change:
        assert re.fullmatch(rf"deb {name} \S+ vs 0\.1-1", found)
    else:
        assert found.startswith(f"{kind} {name} ")


def test_an_unavailable_pin_names_the_package_and_the_archive_option(
    first: tuple[Path, Lockfile], tmp_path: Path
) -> None:
    path, _ = first
    base = next(
        i
        for image in json.loads(path.read_text())["environment"]["images"]
        for i in image["inputs"]
        if i["kind"] == "deb" and i["name"] == "patch"
    )
    gone = base["source"].rsplit("/", 1)[0] + "/patch_0.1-1_amd64.deb"
    edited = _edited(
        path,
        tmp_path / "demo.lock.json",
        "deb",
        "patch",
        version="0.1-1",
        source=gone,
        digest="sha256:" + "1" * 64,
    )
    with pytest.raises(UserError, match=r"environment\.base\.archive") as caught:
        _lock(edited, tmp_path / "cache")
    assert "Debian package patch 0.1-1 is no longer available" in str(caught.value)
