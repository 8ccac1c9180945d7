"""The demo's images as one OCI layout tarball, and back into an empty podman store.

Real podman: the demo's 13 locked images (base, 2 env, 3 history, 7 instance) exported
twice give the same bytes, each blob once; loaded into an empty store of its own, every
locked Id comes back under a name of its own (a tag the store has is never moved, and a
locked plan finds its layers by Id); a changed byte in a layer is a problem of exactly
the images that need it, which are not loaded; an archive that is not an OCI layout (a
path outside it, a link) is refused before podman reads anything.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from rich.console import Console

from evalrepro.build.image_archive import (
    DOCKER_ARCHIVE,
    OCI_ARCHIVE,
    REF_NAME,
    _open_archive,
    export_images,
    load_images,
    loaded_name,
    unpack_layout,
)
from evalrepro.errors import UserError
from evalrepro.pipeline import lock_experiment, run_experiment
from evalrepro.plan.lockfile import LOCKFILE_NAME, read_lockfile
from evalrepro.publish.bundle import write_bundle
from evalrepro.publish.reproduce import reproduce
from evalrepro.records.lockfile import LockedImage, Lockfile
from evalrepro.runtimes.podman import PodmanRuntime
from tests.podman_support import cache_dir, demo_config, needs_podman

LOCKFILE = Path(__file__).resolve().parents[1] / "lockfiles" / "demo.lock.json"


def podman_test(test: Callable) -> Callable:
    for mark in needs_podman:
        test = mark(test)
    return test


def locked_demo(where: Path) -> Lockfile:
    """The demo's images in this user's store, built (if missing) from the committed
    lockfile's pins; its lockfile (image digests checked against the committed one)."""
    path = where / "demo.lock.json"
    shutil.copyfile(LOCKFILE, path)
    console = Console(file=io.StringIO(), width=200)
    lock = lock_experiment(demo_config("demo"), console, output=path, cache_dir=cache_dir())
    committed = Lockfile.model_validate_json(LOCKFILE.read_text())
    assert lock.environment.images == committed.environment.images  # root and rootless
    return lock


def runtime_for(lock: Lockfile) -> PodmanRuntime:
    """A runtime with this process's environment now (a store chosen by it)."""
    runtime = PodmanRuntime(lock.experiment_config().environment, cache_dir())
    runtime.check()
    return runtime


@contextmanager
def empty_store(where: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty podman image store of its own for what runs inside (the shared one, which
    other tests use meanwhile, is left alone)."""
    store = where / "store"
    conf = where / "config" / "containers" / "storage.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text(
        f'[storage]\ndriver = "overlay"\ngraphroot = "{store}/graph"\nrunroot = "{store}/run"\n'
    )
    # Rootless podman reads $XDG_CONFIG_HOME/containers/storage.conf (and ignores the
    # graphroot of a CONTAINERS_STORAGE_CONF); root reads that variable.
    try:
        with monkeypatch.context() as patch:
            if os.geteuid() == 0:
                patch.setenv("CONTAINERS_STORAGE_CONF", str(conf))
            else:
                patch.setenv("XDG_CONFIG_HOME", str(where / "config"))
            yield store
    finally:
        # The overlay folder is a mount (rootless: in podman's user namespace), and the
        # files belong to sub-uids: unmounted and removed inside it, by a podman of the
        # usual store (one of the empty store would make its folders again).
        script = 'umount "$1/graph/overlay" 2>/dev/null; rm -rf "$1"'
        command = ["sh", "-c", script, "sh", str(store)]
        if os.geteuid() != 0:
            command = ["podman", "unshare", *command]
        subprocess.run(command, capture_output=True, check=False)
        assert not store.exists()


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


@pytest.fixture(scope="module")
def demo_lock(tmp_path_factory: pytest.TempPathFactory) -> Lockfile:
    return locked_demo(tmp_path_factory.mktemp("demo-lock"))


@pytest.fixture(scope="module")
def archive(demo_lock: Lockfile, tmp_path_factory: pytest.TempPathFactory) -> Path:
    runtime = runtime_for(demo_lock)
    dest = tmp_path_factory.mktemp("one")
    files = export_images(runtime.images, demo_lock.environment.images, dest)
    assert [path.name for path in files] == [OCI_ARCHIVE]
    return files[0]


def _members(archive: Path) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(archive) as tar:
        return {member.name: member for member in tar.getmembers()}


def _manifests(archive: Path) -> dict[str, dict]:
    """Each image's manifest in the archive, by its name."""
    with tarfile.open(archive) as tar:

        def read(name: str) -> dict:
            handle = tar.extractfile(name)
            assert handle is not None
            return json.loads(handle.read())

        index = read("index.json")
        return {
            d["annotations"][REF_NAME]: read(f"blobs/sha256/{d['digest'].removeprefix('sha256:')}")
            for d in index["manifests"]
        }


@podman_test
def test_the_same_images_export_to_the_same_bytes_each_blob_once(
    demo_lock: Lockfile, archive: Path, tmp_path: Path
) -> None:
    runtime = runtime_for(demo_lock)
    # In another order, into another folder: the same file.
    (again,) = export_images(runtime.images, list(reversed(demo_lock.environment.images)), tmp_path)
    assert _sha256(again) == _sha256(archive)

    members = _members(archive)
    names = list(members)
    assert names == sorted(names)
    assert all(
        m.mtime == 0 and m.uid == 0 and m.gid == 0 and not m.pax_headers for m in members.values()
    )
    assert {m.mode for m in members.values() if m.isfile()} == {0o644}
    manifests = _manifests(archive)
    # Every locked image, named by its tag, its config the locked Id.
    images = {image.tag: image for image in demo_lock.environment.images}
    assert manifests.keys() == images.keys()
    for tag, manifest in manifests.items():
        assert manifest["config"]["digest"] == images[tag].image_digest
    # The base layer is in all 13 images and in the archive once.
    base = manifests[next(t for t in images if "evalrepro-base" in t)]["layers"][0]["digest"]
    assert all(m["layers"][0]["digest"] == base for m in manifests.values())
    # Exactly the blobs of the images: their manifests, configs and layers, each once.
    with tarfile.open(archive) as tar:
        handle = tar.extractfile("index.json")
        assert handle is not None
        listed = {d["digest"] for d in json.loads(handle.read())["manifests"]}
    needed = listed | {
        digest
        for m in manifests.values()
        for digest in (m["config"]["digest"], *(layer["digest"] for layer in m["layers"]))
    }
    blobs = [name for name in names if name.startswith("blobs/sha256/")]
    assert sorted(blobs) == sorted(f"blobs/sha256/{d.removeprefix('sha256:')}" for d in needed)


@podman_test
def test_an_empty_store_gets_every_locked_id_back(
    demo_lock: Lockfile, archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with empty_store(tmp_path, monkeypatch):
        runtime = runtime_for(demo_lock)
        assert runtime.image_ids() == {}
        assert load_images(runtime.images, archive, demo_lock.environment.images) == []
        # Each under the name of its Id, and under no other (not its tag, not the
        # unpacked layout's path).
        assert runtime.image_ids() == {
            loaded_name(image): image.image_digest for image in demo_lock.environment.images
        }
        # Loaded already: nothing is read, not even a broken archive.
        broken = tmp_path / "broken.tar"
        broken.write_bytes(b"not a tar")
        assert load_images(runtime.images, broken, demo_lock.environment.images) == []


@podman_test
def test_loading_moves_no_tag_of_the_store_and_a_locked_plan_finds_its_layers_by_id(
    demo_lock: Lockfile, archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (instance, *_) = [i for i in demo_lock.environment.images if i.layer == "instance"]
    context = tmp_path / "own"
    context.mkdir()
    (context / "Containerfile").write_text("FROM scratch\nCOPY mine /mine\n")
    (context / "mine").write_text("the user's own build of this layer\n")
    with empty_store(tmp_path, monkeypatch):
        runtime = runtime_for(demo_lock)
        # The user's store: their own build under one layer's tag (other bytes).
        runtime.podman("build", "--quiet", "--tag", instance.tag, str(context))
        own = runtime.image_ids()[instance.tag]
        assert own != instance.image_digest

        assert load_images(runtime.images, archive, demo_lock.environment.images) == []
        store = runtime.image_ids()
        assert store[instance.tag] == own  # the user's name still names the user's image
        assert store[loaded_name(instance)] == instance.image_digest

        # The bundle's lockfile, locked again in this store: every layer is found by its
        # locked Id (nothing is built: no layer's tag appears), whatever its tag names.
        path = tmp_path / "again.lock.json"
        shutil.copyfile(LOCKFILE, path)
        console = Console(file=io.StringIO(), width=200)
        again = lock_experiment(demo_config("demo"), console, output=path, cache_dir=cache_dir())
        assert again.environment.images == demo_lock.environment.images
        assert runtime.image_ids() == store


def _changed(archive: Path, blob: str, dest: Path, name: str = "blobs/sha256/{}") -> Path:
    """A copy of ``archive`` with one byte of ``blob``'s data changed."""
    shutil.copyfile(archive, dest)
    member = _members(archive)[name.format(blob.removeprefix("sha256:"))]
    with dest.open("r+b") as handle:
        handle.seek(member.offset_data + member.size // 2)
        byte = handle.read(1)
        handle.seek(-1, os.SEEK_CUR)
        handle.write(bytes([byte[0] ^ 0x01]))
    return dest


@podman_test
def test_a_changed_layer_byte_is_a_problem_of_the_images_that_need_it(
    demo_lock: Lockfile, archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifests = _manifests(archive)
    images = demo_lock.environment.images
    instance = next(image for image in images if image.layer == "instance")
    # The instance's own top layer (its tree): only that image holds it.
    top = manifests[instance.tag]["layers"][-1]["digest"]
    assert [tag for tag, m in manifests.items() if top in [x["digest"] for x in m["layers"]]] == [
        instance.tag
    ]
    tampered = _changed(archive, top, tmp_path / "tampered.tar")
    with empty_store(tmp_path, monkeypatch):
        runtime = runtime_for(demo_lock)
        problems = load_images(runtime.images, tampered, images)
        assert problems == [
            f"image instance {instance.key.removeprefix('sha256:')[:12]}: blob "
            f"{top.removeprefix('sha256:')[:12]} in the archive does not match its digest; "
            "not loaded"
        ]
        ids = runtime.image_ids()
        assert loaded_name(instance) not in ids
        assert all(ids[loaded_name(i)] == i.image_digest for i in images if i is not instance)

    # The base layer is in every image: none of them loads.
    base = manifests[next(i.tag for i in images if i.layer == "base")]["layers"][0]["digest"]
    everywhere = _changed(archive, base, tmp_path / "base.tar")
    with empty_store(tmp_path / "second", monkeypatch):
        runtime = runtime_for(demo_lock)
        problems = load_images(runtime.images, everywhere, images)
        assert len(problems) == len(images)
        assert all("does not match its digest" in problem for problem in problems)
        assert runtime.image_ids() == {}


@podman_test
def test_images_with_a_docker_manifest_travel_in_a_docker_archive_with_their_ids(
    demo_lock: Lockfile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the Nix builder's images are (loaded from a docker-archive): an OCI layout
    cannot keep their Id, so they go into images.docker.tar."""
    runtime = runtime_for(demo_lock)
    # Two instances of one repo: base, env and history layers shared, the top one not.
    ledger = sorted(
        (i for i in demo_lock.environment.images if i.layer == "instance"),
        key=lambda i: i.parent_key or "",
    )
    chosen = [i for i in ledger if i.parent_key == ledger[0].parent_key][:2]
    assert len(chosen) == 2
    seed = tmp_path / "seed.tar"
    runtime.podman("save", "-q", "-m", "--format", "docker-archive", "-o", str(seed),
                   *(i.tag for i in chosen))  # fmt: skip
    with empty_store(tmp_path / "a", monkeypatch):
        docker = runtime_for(demo_lock)
        docker.podman("load", "-q", "-i", str(seed))
        types = docker.podman("image", "inspect", "--format", "{{.ManifestType}}", chosen[0].tag)
        assert types.stdout.strip() == "application/vnd.docker.distribution.manifest.v2+json"
        (archive,) = export_images(docker.images, chosen, tmp_path / "one")
        (again,) = export_images(docker.images, list(reversed(chosen)), tmp_path / "two")
    assert archive.name == DOCKER_ARCHIVE and _sha256(again) == _sha256(archive)
    members = _members(archive)
    assert list(members) == sorted(members)
    assert all(m.mtime == 0 and m.uid == 0 and not m.pax_headers for m in members.values())

    with empty_store(tmp_path / "b", monkeypatch):
        loading = runtime_for(demo_lock)
        assert load_images(loading.images, archive, chosen) == []
        assert loading.image_ids() == {loaded_name(i): i.image_digest for i in chosen}

    with tarfile.open(archive) as tar:
        handle = tar.extractfile("manifest.json")
        assert handle is not None
        entries = json.loads(handle.read())
    config = f"{chosen[0].image_digest.removeprefix('sha256:')}.json"
    top = next(e for e in entries if e["Config"] == config)["Layers"][-1].removesuffix(".tar")
    tampered = _changed(archive, top, tmp_path / "tampered.tar", name="{}.tar")
    with empty_store(tmp_path / "c", monkeypatch):
        loading = runtime_for(demo_lock)
        problems = load_images(loading.images, tampered, chosen)
        assert problems == [
            f"image instance {chosen[0].key.removeprefix('sha256:')[:12]}: blob {top[:12]} in "
            "the archive does not match its digest; not loaded"
        ]
        assert loading.image_ids() == {loaded_name(chosen[1]): chosen[1].image_digest}


@podman_test
def test_a_nix_layer_record_is_checked_inside_the_image_above_it(demo_lock: Lockfile) -> None:
    """The Nix builder's records below an image are layers of it (digest: a diff id)."""
    runtime = runtime_for(demo_lock)
    images = demo_lock.environment.images
    instance = next(image for image in images if image.layer == "instance")
    diff_ids = json.loads(
        runtime.podman(
            "image", "inspect", "--format", "{{json .RootFS.Layers}}", instance.tag
        ).stdout
    )

    def chain(diff_id: str) -> list[LockedImage]:
        below = instance.model_copy(
            update={"layer": "base", "key": "sha256:" + "b" * 64, "parent_key": None,
                    "tag": "nix:evalrepro-base-bbbb.tar", "image_digest": diff_id}
        )  # fmt: skip
        return [below, instance.model_copy(update={"parent_key": below.key})]

    assert load_images(runtime.images, Path("/nonexistent"), chain(diff_ids[0])) == []
    assert load_images(runtime.images, Path("/nonexistent"), chain("sha256:" + "0" * 64)) == [
        f"image base bbbbbbbbbbbb: layer 000000000000 is not in the loaded {instance.tag}"
    ]


# --- untrusted archives (no podman) ------------------------------------------------------


def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> Path:
    with tarfile.open(path, "w") as tar:
        for info, data in members:
            info.size = len(data) if info.isfile() else 0
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return path


def _file(name: str) -> tarfile.TarInfo:
    return tarfile.TarInfo(name)


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ([(_file("../escape"), b"x")], r"member '\.\./escape' is not part of an OCI layout"),
        ([(_file("/etc/passwd"), b"x")], r"member '/etc/passwd' is not part of an OCI layout"),
        ([(_file("blobs/sha256/" + "a" * 63), b"x")], "is not part of an OCI layout"),
        ([(_link("index.json", "/etc/passwd"), b"")], "'index.json' is not a regular file"),
        ([(_link("oci-layout", "index.json", tarfile.LNKTYPE), b"")], "not a regular file"),
        ([(_file("index.json"), b"{}"), (_file("index.json"), b"{}")], "not part of an OCI"),
        ([(_file("oci-layout"), b"{}")], "not an OCI image layout"),
        ([(_file("manifest.json"), b"[]"), (_file("../x"), b"")], "not part of a docker-archive"),
        ([(_file("manifest.json"), b"[{}]")], "not a docker-archive"),
        ([(_link("a" * 64 + "/layer.tar", "/etc/passwd"), b"")], "not a link to a layer"),
    ],
)
def test_an_archive_that_is_not_an_oci_layout_is_refused(
    tmp_path: Path, members: list, message: str
) -> None:
    archive = _tar(tmp_path / "bad.tar", members)
    with pytest.raises(UserError, match=message):
        _open_archive(archive, tmp_path / "out")
    assert not (tmp_path / "escape").exists()


def test_garbage_is_refused_and_a_blob_is_checked_against_its_name(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.tar"
    garbage.write_bytes(os.urandom(4096))
    with pytest.raises(UserError, match="is not a usable tar archive"):
        _open_archive(garbage, tmp_path / "out")
    data = b"layer bytes"
    good = hashlib.sha256(data).hexdigest()
    archive = _tar(
        tmp_path / "blobs.tar",
        [
            (_file("index.json"), b'{"manifests": []}'),
            (_file(f"blobs/sha256/{good}"), data),
            (_file("blobs/sha256/" + "0" * 64), data),
        ],
    )
    assert unpack_layout(archive, tmp_path / "layout") == {"sha256:" + "0" * 64}
    assert (tmp_path / "layout" / "blobs" / "sha256" / good).read_bytes() == data
    assert not (tmp_path / "layout" / "blobs" / "sha256" / ("0" * 64)).exists()


@podman_test
def test_a_reproduction_with_other_builds_leaves_the_users_own_runs_resumable_and_runnable(
    demo_lock: Lockfile, archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    console = Console(file=io.StringIO(), width=200)
    two = demo_config("demo", "dataset.instance_ids=[demo__calc-1,demo__calc-2]")
    mine = tmp_path / "mine"
    # The user's own run, in their store, left unfinished: one of its two trials ran.
    run_experiment(two, console, run_dir=mine, cache_dir=cache_dir(), only={("demo__calc-1", 0)})
    own = read_lockfile(mine / LOCKFILE_NAME)
    (trial,) = [t for t in own.trials if t.key.instance_id == "demo__calc-1"]
    instance = next(i for i in own.environment.images if i.key == trial.image_key)

    # The author's store holds the same layers, but calc-1's instance layer built to other
    # bytes (as another podman would build it), under the same name.
    with empty_store(tmp_path / "author", monkeypatch):
        runtime = runtime_for(demo_lock)
        assert load_images(runtime.images, archive, demo_lock.environment.images) == []
        for image in demo_lock.environment.images:
            runtime.podman("tag", image.image_digest, image.tag)
        context = tmp_path / "other"
        context.mkdir()
        (context / "Containerfile").write_text(
            f"FROM {instance.image_digest}\nLABEL evalrepro.test=another-podman\n"
        )
        runtime.podman("build", "--pull=never", "--quiet", "--tag", instance.tag, str(context))
        authors = tmp_path / "authors"
        one = demo_config("demo", "dataset.instance_ids=[demo__calc-1]")
        run_experiment(one, console, run_dir=authors, cache_dir=cache_dir())
        theirs = read_lockfile(authors / LOCKFILE_NAME)
        (other,) = [i for i in theirs.environment.images if i.tag == instance.tag]
        assert other.image_digest != instance.image_digest
        bundle = tmp_path / "authors.bundle.tar.gz"
        write_bundle(authors, bundle, with_images=True, cache_dir=cache_dir())

    user = runtime_for(own)
    try:
        reproduction = reproduce(bundle, console, run_dir=tmp_path / "again", cache_dir=cache_dir())
        assert (reproduction.agreeing, len(reproduction.trials)) == (1, 1)
        ids = user.image_ids()
        assert ids[loaded_name(other)] == other.image_digest
        # Every name of the user's run still names the user's image.
        assert all(ids[image.tag] == image.image_digest for image in own.environment.images)

        # The user's run resumes: the plan still matches its lockfile; the other trial runs.
        resumed = run_experiment(two, console, run_dir=mine, cache_dir=cache_dir()).results
        assert (resumed.planned, resumed.missing, resumed.resolved) == (2, 0, 2)
        # And runs again from its lockfile, into a folder of its own.
        again = run_experiment(
            own.experiment_config(),
            console,
            run_dir=tmp_path / "from-lockfile",
            cache_dir=cache_dir(),
            locked=own,
            only={("demo__calc-1", 0)},
        ).results
        assert again.resolved == 1
    finally:
        user.podman("rmi", loaded_name(other), check=False)
