"""A lockfile's pinned build inputs, collected from the cache, and seeded into another.

:func:`collect_inputs` copies every file a lockfile's image layers pin (``PinnedInput``)
into one folder, each named by the hex of its pin's digest and checked against it on
the way: a bundle that holds them lets a reviewer build the images without a Debian
mirror or PyPI. :func:`seed_cache` puts them back where the builders look for them in an
empty cache; :func:`offline_config` is the lockfile's config with every repo history
taken from the folder.

What each kind of input is, where the builders keep it (under the evalrepro cache,
``--cache-dir``, or in the Nix store; "store name" is the Nix builder's name of the file,
``builders/nix.py``), and how it comes back (:data:`KINDS` is this list as data):

* ``deb``, a .deb pinned by its sha256. Containerfile: ``debian/debs/<hex>.deb``, where
  ``debian.fetch`` looks before any mirror; seeded there. Nix: ``nix/debs/<store
  name>`` (seeded there: the builder takes it instead of downloading), ``debs/<hex>.deb``
  or the Nix store.
* ``wheel``, by sha256: ``wheels.fetch_wheels``' content cache, containerfile
  ``wheels/wheels/<hex[:2]>/<hex>/<file>``, nix ``wheels/<hex[:2]>/<hex>/<file>`` (each
  seeded there), or ``nix/wheels/<store name>`` or the Nix store.
* ``npm``, an npm tarball pinned by its sha256 (its integrity string beside):
  containerfile ``npm/tarballs/<hex[:2]>/<hex>.tgz``, ``npm.fetch_tarballs``' content
  cache (seeded there). The Nix builder refuses npm packages.
* ``tree`` (nix), the tar of the tree at a base commit, by sha256:
  ``nix/trees/<commit>.tree.tar`` (seeded there; the builder checks it against the pin)
  or the Nix store.
* ``tool`` (nix), the static busybox every derivation starts from, pinned by the sha256
  of its folder's NAR: the Nix store (seeded there with ``nix-store --add-fixed
  --recursive``, where the builder finds it instead of this machine's /bin/busybox).
* ``history``, a repo's history: the containerfile builder pins the digest of its refs,
  the Nix builder the sha256 of its tar. Collected by exporting it from the dataset's
  repo sources (as a plan resolves them) as the tar the Nix builder pins (a bare repo).
  Not seeded: no builder keeps histories in the cache, it reads the dataset's sources;
  :func:`offline_config` names each tar as its repo's ``archive`` source (a bare repo at
  an archive's top is one), which gives the same refs, so the same history digest.

The other kinds are not files: ``setting``, ``package``, ``requirement``,
``npm-request``, ``npm-lockfile`` (a repository's lockfile: its history carries it) and
``commit`` are values the lockfile holds; ``recipe`` is evalrepro's own Containerfiles and Nix
files (its version pins them); ``image`` (a prebuilt image) travels in the image archive
(``image_archive.py``).
"""

from __future__ import annotations

import copy
import graphlib
import hashlib
import os
import shutil
import stat
import struct
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from omegaconf import OmegaConf
from pydantic import BaseModel, ConfigDict, ValidationError

from evalrepro.build import nixstore
from evalrepro.build.nix import _write_tar, deb_store_name, tar_store_name, wheel_store_name
from evalrepro.config.experiment import ExperimentConfig
from evalrepro.digest import sha256_file, short_digest
from evalrepro.errors import UserError, validation_message
from evalrepro.records.image import PinnedInput
from evalrepro.records.lockfile import LockedImage, Lockfile
from evalrepro.sample import load_samples
from evalrepro.sources.archive import ArchiveRepo
from evalrepro.sources.resolve import materialize, resolve_sources

#: The Nix builder's store name of its busybox folder (``builders/nix.py``).
BUSYBOX_FOLDER = "evalrepro-busybox"
#: Kinds that are not files: values in the lockfile, evalrepro's own recipe files, or
#: an image (in the image archive).
NOT_FILES = frozenset(
    {
        "setting",
        "package",
        "requirement",
        "npm-request",
        "npm-lockfile",
        "commit",
        "recipe",
        "image",
    }
)


class CollectedInput(BaseModel):
    """One pinned input, copied: what it is, and its file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str
    name: str
    version: str = ""
    #: The pin's digest (``sha256:<hex>``); the file is named by its hex.
    digest: str
    #: The hex sha256 of the file's bytes: the digest's hex for every kind pinned by its
    #: bytes; a containerfile history's pin is over its refs, a busybox's over its NAR.
    sha256: str
    size: int
    path: Path

    @property
    def label(self) -> str:
        return f"{self.kind} {self.name}" + (f" {self.version}" if self.version else "")


def _hex(digest: str) -> str:
    return digest.removeprefix("sha256:")


def _label(pin: PinnedInput) -> str:
    return f"{pin.label} ({short_digest(pin.digest)})"


# --- the kinds: where each lives, and how its file gives its pin's digest -------------------


_sha256_file = sha256_file


def _nar_string(data: bytes) -> bytes:
    return struct.pack("<Q", len(data)) + data + b"\0" * (-len(data) % 8)


def busybox_nar_sha256(binary: Path) -> str:
    """The sha256 of the NAR of a folder holding ``binary`` as an executable ``busybox``:
    the Nix builder's pin of its busybox (``nix-hash --type sha256 FOLDER``), computed
    here so that checking one needs no Nix."""
    digest = hashlib.sha256()
    for token in (
        b"nix-archive-1", b"(", b"type", b"directory", b"entry", b"(", b"name", b"busybox",
        b"node", b"(", b"type", b"regular", b"executable", b"", b"contents",
    ):  # fmt: skip
        digest.update(_nar_string(token))
    size = binary.stat().st_size
    digest.update(struct.pack("<Q", size))
    with binary.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    digest.update(b"\0" * (-size % 8))
    for token in (b")", b")", b")"):
        digest.update(_nar_string(token))
    return "sha256:" + digest.hexdigest()


def _containerfile_wheel(pin: PinnedInput) -> str:
    # As builders/containerfile.py's _wheel_pin: the URL's last part, unquoted.
    return unquote(urlsplit(pin.source).path.rsplit("/", 1)[-1])


def _nix_wheel(pin: PinnedInput) -> str:
    # As builders/nix.py's _env: the URL's last part as it is.
    return pin.source.rsplit("/", 1)[-1].split("#")[0]


def _store(name: str, pin: PinnedInput, *, recursive: bool = False) -> Path:
    return Path(nixstore.fixed_path(name, _hex(pin.digest), recursive=recursive))


@dataclass(frozen=True)
class InputKind:
    """Where one builder keeps one kind of pinned file in the cache, and how to check it."""

    #: Where the builder looks for it, under the cache (or in the Nix store); seeding
    #: writes the first.
    places: Callable[[PinnedInput, Path], list[Path]]
    #: The pin's digest of a file of this kind.
    digest: Callable[[Path], str] = _sha256_file
    #: Seeding by adding to the Nix store, not by a file in the cache.
    nix_store: bool = False


def _wheel_dir(cache: Path, pin: PinnedInput) -> Path:
    return cache / _hex(pin.digest)[:2] / _hex(pin.digest)


KINDS: dict[tuple[str, str], InputKind] = {
    ("containerfile", "deb"): InputKind(
        lambda pin, cache: [cache / "debian" / "debs" / f"{_hex(pin.digest)}.deb"]
    ),
    ("containerfile", "wheel"): InputKind(
        lambda pin, cache: [
            _wheel_dir(cache / "wheels" / "wheels", pin) / _containerfile_wheel(pin)
        ]
    ),
    ("containerfile", "npm"): InputKind(
        lambda pin, cache: [
            cache / "npm" / "tarballs" / _hex(pin.digest)[:2] / f"{_hex(pin.digest)}.tgz"
        ]
    ),
    ("nix", "deb"): InputKind(
        lambda pin, cache: [
            cache / "nix" / "debs" / deb_store_name(pin),
            cache / "debs" / f"{_hex(pin.digest)}.deb",
            _store(deb_store_name(pin), pin),
        ]
    ),
    ("nix", "wheel"): InputKind(
        lambda pin, cache: [
            _wheel_dir(cache / "wheels", pin) / _nix_wheel(pin),
            cache / "nix" / "wheels" / wheel_store_name(pin),
            _store(wheel_store_name(pin), pin),
        ]
    ),
    ("nix", "tree"): InputKind(
        lambda pin, cache: [
            cache / "nix" / "trees" / f"{pin.version}.tree.tar",
            _store(tar_store_name("tree", pin), pin),
        ]
    ),
    ("nix", "tool"): InputKind(
        lambda pin, cache: [
            _store(BUSYBOX_FOLDER, pin, recursive=True) / "busybox",
            cache / "nix" / "busybox" / BUSYBOX_FOLDER / "busybox",
        ],
        digest=busybox_nar_sha256,
        nix_store=True,
    ),
}


def _file_pins(lockfile: Lockfile) -> list[tuple[InputKind, PinnedInput]]:
    """Every pinned file of the lockfile's layers (histories apart), once each."""
    found: dict[tuple[str, str, str, str], tuple[InputKind, PinnedInput]] = {}
    for image in lockfile.environment.images:
        for pin in image.inputs:
            if pin.kind in NOT_FILES or pin.kind == "history":
                continue
            kind = KINDS.get((image.builder, pin.kind))
            if kind is None:
                raise UserError(
                    f"{_label(pin)} of the {image.builder} {image.layer} layer: evalrepro "
                    "does not know where that builder keeps this kind of input"
                )
            found.setdefault((pin.kind, pin.name, pin.version, pin.digest), (kind, pin))
    return [found[key] for key in sorted(found)]


def _instance_histories(lockfile: Lockfile) -> dict[str, tuple[LockedImage, PinnedInput]]:
    """Each locked instance's history layer and its pin (instances whose image chain has
    one: every builder but ``image``)."""
    by_key = {image.key: image for image in lockfile.environment.images}
    found = {}
    for trial in lockfile.trials:
        key = trial.image_key
        while key and key in by_key:
            image = by_key[key]
            pin = next((i for i in image.inputs if i.kind == "history"), None)
            if pin is not None:
                found[trial.key.instance_id] = (image, pin)
                break
            key = image.parent_key or ""
    return found


# --- collect ------------------------------------------------------------------------------


def collect_inputs(lockfile: Lockfile, cache_dir: Path, dest: Path) -> list[CollectedInput]:
    """Copy every pinned input of ``lockfile``'s images from ``cache_dir`` (and the Nix
    store) into ``dest/<hex of its pin's digest>``, each checked against its pin.

    The repo histories are exported from the dataset's sources (``lockfile``'s config, as
    a plan resolves them). A pinned file found nowhere, or whose bytes differ from its
    pin everywhere, is a UserError naming it.
    """
    dest.mkdir(parents=True, exist_ok=True)
    collected = []
    for kind, pin in _file_pins(lockfile):
        target = dest / _hex(pin.digest)
        if not _holds(target, kind.digest, pin.digest):
            places = kind.places(pin, cache_dir)
            source = next((p for p in places if _holds(p, kind.digest, pin.digest)), None)
            if source is None:
                raise UserError(
                    f"{_label(pin)} is not in the cache {cache_dir} (looked in "
                    f"{', '.join(str(p) for p in places)}): build the run's images first"
                )
            _copy_checked(source, target, kind.digest, pin)
        collected.append(_collected(pin, target))
    collected += collect_histories(lockfile, cache_dir, dest)
    return sorted(collected, key=lambda c: (c.kind, c.name, c.version, c.digest))


def _collected(pin: PinnedInput, path: Path) -> CollectedInput:
    return CollectedInput(
        kind=pin.kind,
        name=pin.name,
        version=pin.version,
        digest=pin.digest,
        sha256=_hex(_sha256_file(path)),
        size=path.stat().st_size,
        path=path,
    )


def _holds(path: Path, digest: Callable[[Path], str], expected: str) -> bool:
    """``path`` is a regular file (not a link) whose digest is ``expected``."""
    try:
        return stat.S_ISREG(path.lstat().st_mode) and digest(path) == expected
    except OSError:
        return False


def _copy_checked(
    source: Path, target: Path, digest: Callable[[Path], str], pin: PinnedInput
) -> None:
    """Copy to ``target`` (whole or not at all), the copy checked against ``pin``: a
    file that changed since it was checked is not taken."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        shutil.copyfile(source, partial)
        got = digest(partial)
        if got != pin.digest:
            raise UserError(
                f"{pin.label}: the file has {short_digest(got)}, the lockfile pins "
                f"{short_digest(pin.digest)}"
            )
        partial.chmod(0o755 if pin.kind == "tool" else 0o644)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def collect_histories(lockfile: Lockfile, cache_dir: Path, dest: Path) -> list[CollectedInput]:
    """Each history the lockfile pins, exported from its source as the tar of a bare repo."""
    wanted = _instance_histories(lockfile)
    if not wanted:
        return []
    config = lockfile.experiment_config()
    dataset = config.dataset
    resolved = resolve_sources(
        dataset.sources(),
        load_samples(Path(dataset.instances)),
        cache_dir,
        dataset=dataset.name,
        selected=set(wanted),
    )
    collected: dict[str, CollectedInput] = {}
    for instance_id, (image, pin) in sorted(wanted.items()):
        if pin.digest in collected:
            continue
        if instance_id not in resolved.keys:
            reason = resolved.unavailable.get(instance_id, "no source serves it")
            raise UserError(f"{_label(pin)} (instance {instance_id}): {reason}")
        checkout = resolved.checkout(instance_id)
        if image.builder != "nix" and checkout.source_digest != pin.digest:
            raise UserError(
                f"{pin.label} (instance {instance_id}): its source ({checkout.name}) gives "
                f"{short_digest(checkout.source_digest)}, the lockfile pins "
                f"{short_digest(pin.digest)}"
            )
        target = dest / _hex(pin.digest)
        with tempfile.TemporaryDirectory(dir=dest, prefix=".history-") as scratch:
            checkout.export_history(Path(scratch) / "repo.git")
            tar = Path(scratch) / "history.tar"
            # The tar the Nix builder pins (sorted, mtime 0, owner 0): for a nix lockfile
            # its sha256 is the pin; for a containerfile one, any fixed bytes would do.
            _write_tar(Path(scratch) / "repo.git", tar)
            check = _sha256_file if image.builder == "nix" else _refs_checked(pin)
            _copy_checked(tar, target, check, pin)
        collected[pin.digest] = _collected(pin, target)
    return list(collected.values())


def _refs_checked(pin: PinnedInput) -> Callable[[Path], str]:
    """A containerfile history's check: its refs were compared before the export."""
    return lambda _: pin.digest


# --- seed ---------------------------------------------------------------------------------


def seed_cache(source: Path, lockfile: Lockfile, cache_dir: Path) -> int:
    """Put each pinned file of ``lockfile`` from ``source/<hex>`` where the builders look
    for it under ``cache_dir`` (the busybox of a Nix lockfile: into the Nix store),
    each checked against its pin; how many files were put (or found) there.

    Then building the lockfile's images with ``cache_dir`` fetches nothing from a mirror
    or an index. The histories stay in ``source``: :func:`offline_config` names them as
    the repos' sources. A file missing from ``source``, or whose bytes are not its pin's,
    is a UserError naming it.
    """
    seeded = 0
    busybox = []
    for kind, pin in _file_pins(lockfile):
        origin = _source_file(source, pin, kind.digest)
        if kind.nix_store:
            busybox.append((origin, pin))
            continue
        target = kind.places(pin, cache_dir)[0]
        if not _holds(target, kind.digest, pin.digest):
            _copy_checked(origin, target, kind.digest, pin)
        seeded += 1
    for origin, pin in busybox:
        _add_busybox(origin, pin, cache_dir)
        seeded += 1
    for _, (image, pin) in sorted(_instance_histories(lockfile).items()):
        check = _sha256_file if image.builder == "nix" else None
        _source_file(source, pin, check)
    return seeded


def _source_file(source: Path, pin: PinnedInput, digest: Callable[[Path], str] | None) -> Path:
    """``source/<hex>``: a regular file (not a link) with the pinned digest."""
    path = source / _hex(pin.digest)
    try:
        regular = stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        regular = False
    if not regular:
        raise UserError(f"{_label(pin)} is not in {source} (no regular file {path.name})")
    if digest is not None and (got := digest(path)) != pin.digest:
        raise UserError(
            f"{pin.label}: {path} has {short_digest(got)}, the lockfile pins "
            f"{short_digest(pin.digest)}"
        )
    return path


def _add_busybox(binary: Path, pin: PinnedInput, cache_dir: Path) -> None:
    """The Nix builder's busybox folder, added to the Nix store by its pinned hash."""
    if shutil.which("nix-store") is None:
        raise UserError(f"{pin.label}: Nix is not installed, and its builder needs it in the store")
    if not nixstore.missing([str(_store(BUSYBOX_FOLDER, pin, recursive=True))]):
        return
    with tempfile.TemporaryDirectory(dir=_mkdir(cache_dir / "nix")) as scratch:
        folder = Path(scratch) / BUSYBOX_FOLDER
        folder.mkdir()
        _copy_checked(binary, folder / "busybox", busybox_nar_sha256, pin)
        try:
            (added,) = nixstore.add_fixed([folder], recursive=True)
        except (nixstore.NixError, ValueError) as error:
            raise UserError(f"{pin.label}: cannot add it to the Nix store: {error}") from None
    if added != str(_store(BUSYBOX_FOLDER, pin, recursive=True)):
        raise UserError(f"{pin.label}: the Nix store put it at {added}, not its pinned path")


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


# --- the histories, as repo sources ---------------------------------------------------------


def history_sources(lockfile: Lockfile, source: Path, cache_dir: Path) -> dict[str, Any]:
    """What to put into the lockfile config's ``dataset`` so that every locked instance's
    history comes from ``source`` (:func:`collect_inputs`' folder): ``repos`` (each repo
    of the locked instances: the archive of its history) and ``instance_repos`` (an
    instance the config gives a source of its own: the archive of its history).

    ``repos`` is overridden, not ``instance_repos``, where it can be: ``differences``
    lets a repo's source change (the history digests are compared) but counts a new
    ``instance_repos`` where the config had none as a config difference; and a remote's
    history is the ancestry of the base commits of its repo's instances, which is what
    the archive holds. A repo whose instances have more than one history (a list of
    sources) gets a list of archives, each instance's own history first among those
    holding its commit.
    """
    histories = _instance_histories(lockfile)
    dataset = lockfile.config.get("dataset", {})
    own = set(dataset.get("instance_repos") or {})
    commits = {i.instance_id: i.base_commit for i in lockfile.dataset.instances}
    archives: dict[str, dict[str, str]] = {}

    def archive(pin: PinnedInput) -> dict[str, str]:
        if pin.digest not in archives:
            path = _source_file(source, pin, None)
            archives[pin.digest] = {
                "kind": "archive",
                "path": str(path.absolute()),
                "sha256": _hex(_sha256_file(path)),
            }
        return archives[pin.digest]

    instance_repos = {
        instance_id: archive(pin)
        for instance_id, (_, pin) in sorted(histories.items())
        if instance_id in own
    }
    by_repo: dict[str, dict[str, PinnedInput]] = {}
    for instance_id, (_, pin) in sorted(histories.items()):
        if instance_id not in own:
            by_repo.setdefault(pin.name, {})[instance_id] = pin
    repos: dict[str, Any] = {}
    for repo, pins in sorted(by_repo.items()):
        distinct = {pin.digest: pin for pin in pins.values()}
        if len(distinct) == 1:
            repos[repo] = archive(next(iter(distinct.values())))
        else:
            found = {digest: archive(pin) for digest, pin in distinct.items()}
            repos[repo] = _ordered(repo, pins, commits, found, cache_dir)
    return {"repos": repos, "instance_repos": instance_repos}


def _ordered(
    repo: str,
    pins: dict[str, PinnedInput],
    commits: dict[str, str],
    by_digest: dict[str, dict[str, str]],
    cache_dir: Path,
) -> list[dict[str, str]]:
    """The archives of one repo's histories (by pin digest) in an order where each
    instance's commit is found first in its own history (a plan takes the first source
    holding it)."""
    holds = {
        digest: materialize(repo, ArchiveRepo(path=a["path"], sha256=a["sha256"]), cache_dir)
        for digest, a in by_digest.items()
    }
    order: graphlib.TopologicalSorter[str] = graphlib.TopologicalSorter()
    for digest in sorted(by_digest):
        order.add(digest)
    for instance_id, pin in sorted(pins.items()):
        for other, checkout in holds.items():
            if other != pin.digest and checkout.has_commit(commits[instance_id]):
                order.add(other, pin.digest)  # its own history comes first
    try:
        return [by_digest[digest] for digest in order.static_order()]
    except graphlib.CycleError:
        raise UserError(
            f"repo {repo}: its histories hold each other's base commits; no order of "
            "archive sources serves each instance from its own history"
        ) from None


def offline_config(
    lockfile: Lockfile, source: Path, cache_dir: Path, *, instances: Path | None = None
) -> ExperimentConfig:
    """The lockfile's config with every locked instance's history from ``source``
    (:func:`history_sources`) and, given ``instances``, the instances file from there.
    Run it with ``locked=lockfile``: what it changes is what ``differences`` lets pass.

    The repos' sources are replaced (those of repos no locked instance has are dropped:
    an author's paths need not exist here); the ``instance_repos`` of instances that
    are not locked are kept as they are, and must be valid here.
    """
    data = copy.deepcopy(lockfile.config)
    dataset = data.setdefault("dataset", {})
    updates = history_sources(lockfile, source, cache_dir)
    if updates["repos"]:
        dataset["repos"] = updates["repos"]
    if updates["instance_repos"]:
        dataset["instance_repos"] = {
            **(dataset.get("instance_repos") or {}),
            **updates["instance_repos"],
        }
    if instances is not None:
        dataset["instances"] = str(instances.absolute())
    resolved = OmegaConf.to_container(OmegaConf.create(data), resolve=True)
    try:
        return ExperimentConfig.model_validate(resolved)
    except ValidationError as error:
        raise UserError(
            f"lockfile config: {validation_message(error, model=ExperimentConfig)}"
        ) from None
