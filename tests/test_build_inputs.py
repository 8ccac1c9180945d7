"""A lockfile's pinned build inputs, collected from a warm cache and seeded into an empty
one, from which the demo's 13 images rebuild to their locked digests without a mirror,
an index or the demo's own repo builder.

Real podman and mmdebstrap: the rebuild runs in an empty image store of its own, with a
cache that holds only what :func:`seed_cache` put there, every download and resolve of
evalrepro replaced by a failure, and the proxies pointing at a closed port (so apt and pip
in a subprocess would fail too).
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from rich.console import Console

from evalrepro.build import debian, wheels
from evalrepro.build import inputs as build_inputs
from evalrepro.build.inputs import (
    CollectedInput,
    busybox_nar_sha256,
    collect_inputs,
    offline_config,
    seed_cache,
)
from evalrepro.errors import UserError
from evalrepro.pipeline import plan_and_lock
from evalrepro.plan.lockfile import differences
from evalrepro.records.lockfile import Lockfile
from tests.podman_support import cache_dir
from tests.test_image_archive import empty_store, locked_demo, podman_test


@pytest.fixture(scope="module")
def demo_lock(tmp_path_factory: pytest.TempPathFactory) -> Lockfile:
    return locked_demo(tmp_path_factory.mktemp("demo-lock"))


@pytest.fixture(scope="module")
def collected(
    demo_lock: Lockfile, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, list[CollectedInput]]:
    dest = tmp_path_factory.mktemp("inputs")
    return dest, collect_inputs(demo_lock, cache_dir(), dest)


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


@podman_test
def test_every_pinned_file_is_collected_by_its_digest(
    demo_lock: Lockfile, collected: tuple[Path, list[CollectedInput]]
) -> None:
    dest, inputs = collected
    pins = {
        (pin.kind, pin.name, pin.version, pin.digest)
        for image in demo_lock.environment.images
        for pin in image.inputs
        if pin.kind in ("deb", "wheel", "history")
    }
    assert {(c.kind, c.name, c.version, c.digest) for c in inputs} == pins
    kinds = {kind: sum(c.kind == kind for c in inputs) for kind in ("deb", "wheel", "history")}
    assert kinds == {"deb": 143, "wheel": 4, "history": 3}
    for item in inputs:
        assert item.path == dest / item.digest.removeprefix("sha256:")
        assert _sha256(item.path) == item.sha256
        assert item.path.stat().st_size == item.size
        if item.kind != "history":  # a containerfile history's pin is over its refs
            assert item.sha256 == item.digest.removeprefix("sha256:")
    # Nothing else: content-addressed files only, no leftovers.
    assert sorted(path.name for path in dest.iterdir()) == sorted(c.path.name for c in inputs)
    # A history is the tar of a bare repo: what an archive repo source may be.
    history = next(c for c in inputs if c.kind == "history")
    with tarfile.open(history.path) as tar:
        assert {"HEAD", "objects", "refs"} <= set(tar.getnames())
    # Collecting again changes nothing.
    assert collect_inputs(demo_lock, cache_dir(), dest) == inputs
    sizes = {kind: sum(c.size for c in inputs if c.kind == kind) for kind in kinds}
    print(f"collected inputs: {sum(sizes.values())} bytes {sizes}")


@podman_test
def test_a_pin_the_cache_lacks_is_named(demo_lock: Lockfile, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"deb adduser 3\.134 \(c24fe4eb8e60\) is not in the cache"):
        collect_inputs(demo_lock, tmp_path / "empty-cache", tmp_path / "inputs")


@podman_test
def test_seeding_refuses_a_file_that_is_not_its_pin(
    demo_lock: Lockfile, collected: tuple[Path, list[CollectedInput]], tmp_path: Path
) -> None:
    dest, inputs = collected
    source = tmp_path / "source"
    shutil.copytree(dest, source)
    wheel = next(c for c in inputs if c.kind == "wheel")
    (source / wheel.path.name).write_bytes(b"not a wheel")
    with pytest.raises(UserError, match=rf"{wheel.label}: .* has \w+, the lockfile pins"):
        seed_cache(source, demo_lock, tmp_path / "cache")
    (source / wheel.path.name).unlink()
    with pytest.raises(UserError, match=rf"{wheel.label} \(\w+\) is not in {source}"):
        seed_cache(source, demo_lock, tmp_path / "cache")


@pytest.mark.skipif(shutil.which("nix-hash") is None, reason="nix-hash is not installed")
def test_the_busybox_pin_is_nix_hash_of_its_folder(tmp_path: Path) -> None:
    folder = tmp_path / "evalrepro-busybox"
    folder.mkdir()
    binary = folder / "busybox"
    binary.write_bytes(os.urandom(1001))  # not a multiple of 8: the NAR pads it
    binary.chmod(0o755)
    done = subprocess.run(
        ["nix-hash", "--type", "sha256", str(folder)], capture_output=True, text=True, check=True
    )
    assert busybox_nar_sha256(binary) == f"sha256:{done.stdout.strip()}"


def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every way evalrepro fetches or resolves an input fails; so do apt's and pip's."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("tried the network")

    for module, name in (
        (debian, "resolve"),
        (debian, "_download"),
        (wheels, "resolve_wheels"),
        (wheels, "_download"),
    ):
        monkeypatch.setattr(module, name, refuse)
    # The demo's repos are built by evalrepro: here they come from the collected tars.
    import evalrepro.sources.demo_repos

    monkeypatch.setattr(evalrepro.sources.demo_repos, "build_repo", refuse)
    for variable in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.setenv(variable, "http://127.0.0.1:9")
    monkeypatch.setenv("PIP_NO_INDEX", "1")


@podman_test
def test_an_empty_cache_seeded_from_the_inputs_rebuilds_every_image_offline(
    demo_lock: Lockfile,
    collected: tuple[Path, list[CollectedInput]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source, inputs = collected
    cache = tmp_path / "cache"
    files = sum(c.kind != "history" for c in inputs)
    assert seed_cache(source, demo_lock, cache) == files
    assert seed_cache(source, demo_lock, cache) == files  # again: found there, checked
    config = offline_config(demo_lock, source, cache)
    histories = {c.digest: c for c in inputs if c.kind == "history"}
    assert {repo: s.kind for repo, s in config.dataset.repos.items()} == {
        repo: "archive" for repo in ("demo/calc", "demo/ledger", "demo/textkit")
    }
    assert {str(s.path) for s in config.dataset.repos.values()} == {
        str(c.path) for c in histories.values()
    }
    _no_network(monkeypatch)
    with empty_store(tmp_path, monkeypatch):
        console = Console(file=io.StringIO(), width=200)
        _, plan, rebuilt = plan_and_lock(config, console, cache, pinned_by=demo_lock)
        built = {
            record.key: record.built
            for trial in plan.trials
            for record in getattr(trial.image, "layers", [])
        }
    assert rebuilt.environment.build_failures == []
    assert len(built) == len(demo_lock.environment.images) and all(built.values())
    assert rebuilt.environment.images == demo_lock.environment.images
    assert differences(demo_lock, rebuilt) == []


def _git(*args: str, cwd: Path) -> str:
    env = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "PATH": os.environ["PATH"]}
    identity = ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgSign=false"]
    done = subprocess.run(
        ["git", *identity, *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_a_repo_of_two_histories_lists_each_instances_own_first(tmp_path: Path) -> None:
    """Two histories of one repo (a list of sources): the later one holds the earlier
    one's commit too, so the earlier one's archive must come first."""
    from evalrepro.build.nix import _write_tar
    from evalrepro.records.image import PinnedInput

    work = tmp_path / "work"
    work.mkdir()
    _git("init", "-q", "-b", "main", cwd=work)
    (work / "a.txt").write_text("one\n")
    _git("add", "a.txt", cwd=work)
    _git("commit", "-q", "-m", "one", cwd=work)
    first = _git("rev-parse", "HEAD", cwd=work)
    archives = {}
    for name in ("old", "new"):
        if name == "new":
            (work / "a.txt").write_text("two\n")
            _git("commit", "-q", "-am", "two", cwd=work)
        bare = tmp_path / f"{name}.git"
        _git("clone", "-q", "--bare", str(work), str(bare), cwd=tmp_path)
        tar = tmp_path / f"{name}.tar"
        _write_tar(bare, tar)
        archives[f"sha256:{name * 8}"] = {
            "kind": "archive",
            "path": str(tar),
            "sha256": _sha256(tar),
        }
    second = _git("rev-parse", "HEAD", cwd=work)
    pins = {
        "x__old": PinnedInput(kind="history", name="x", digest="sha256:" + "old" * 8),
        "x__new": PinnedInput(kind="history", name="x", digest="sha256:" + "new" * 8),
    }
    commits = {"x__old": first, "x__new": second}
    for given in (archives, dict(reversed(archives.items()))):
        ordered = build_inputs._ordered("x", pins, commits, given, tmp_path / "cache")
        assert [Path(a["path"]).name for a in ordered] == ["old.tar", "new.tar"]
