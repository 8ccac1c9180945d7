"""A run's container images as one deterministic archive, and back into podman.

:func:`export_images` writes every locked image (base, env, history, instance: each its
own manifest and config, so each keeps its Id) into ``images.oci.tar``: an OCI image
layout whose ``index.json`` names each image by its tag
(``org.opencontainers.image.ref.name``), whose blobs are stored once however many images
share them (the base layer is in every image, and in the archive once). podman writes the
layout (``podman push IMAGE-ID oci:DIR:NAME``: layers gzip-compressed, the config blob
byte for byte, so the config digest, the image Id, is the store's); evalrepro re-packs it
as a tar that is a function of the images alone: entries sorted, mtime 0, owner 0, modes
0755 / 0644, no pax headers, the index's descriptors sorted and written as canonical
JSON. Exporting the same images twice gives the same bytes (with one podman version:
gzip's output is podman's compressor's).

An image whose manifest in the store is Docker's (the Nix builder's, which enter podman
with ``podman load`` of a docker-archive; some prebuilt ones) cannot go into an OCI
layout with its Id: podman 4.3 converts its config when it writes OCI, and does not read
a Docker manifest from an OCI layout. Those go into ``images.docker.tar`` instead, one
multi-image docker-archive (``podman save -m``: config bytes kept, layers uncompressed,
each once), re-packed the same way, each image named by its tag. Docker's store keeps
no manifest and writes no OCI layout: every image exported from it goes there (``docker
save``, re-packed by the store into the same shape), and loads into either store with
its Id.

:func:`load_images` treats an archive as untrusted. Of an OCI layout it unpacks only what
a layout holds (``oci-layout``, ``index.json``, ``blobs/sha256/<64 hex>``; regular files
and directories, nothing else), each blob checked against its name while it is written,
at most the archive's own size in all, then pulls each image from the unpacked layout
(``podman pull oci:DIR:NAME``). A docker-archive it reads through once, refusing any
member a ``podman save`` does not write and checking each layer and config against its
name, then lets podman read it (``podman pull docker-archive:FILE:@N``). Each image is
tagged with its locked tag and every Id compared with the lockfile's. What is wrong is
one problem line per image, never a traceback.

Without evalrepro, a reviewer loads one image with
``podman pull oci-archive:images.oci.tar:localhost/evalrepro-instance:<key>`` (podman
unpacks the whole archive for each pull, which is why evalrepro unpacks it once), or all
of a docker-archive with ``podman load -i images.docker.tar``.

Records of the Nix builder below an instance (tag ``nix:<derivation>``) are not podman
images: their digest is the diff id of a layer inside the instance image, which the
archive holds with it, and which :func:`load_images` checks in the loaded image.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import secrets
import shutil
import stat
import tarfile
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from evalrepro.build.tarball import member_info
from evalrepro.digest import canonical_json, short_digest
from evalrepro.errors import UserError
from evalrepro.records.lockfile import LockedImage
from evalrepro.runtimes.store import ImageStore, StoreError

OCI_ARCHIVE = "images.oci.tar"
DOCKER_ARCHIVE = "images.docker.tar"
#: The annotation an OCI layout names its images by.
REF_NAME = "org.opencontainers.image.ref.name"
INDEX_MEDIA_TYPE = "application/vnd.oci.image.index.v1+json"
MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"
OCI_LAYOUT = b'{"imageLayoutVersion":"1.0.0"}'
#: The Nix builder's records below an image: a layer inside it, not a podman image.
LAYER_TAG_PREFIX = "nix:"
#: What an unpacked archive may hold, and how big its JSON files may be.
_MEMBERS = re.compile(r"(?:oci-layout|index\.json|blobs|blobs/sha256|blobs/sha256/[0-9a-f]{64})")
_JSON_LIMIT = 16 << 20
_MEMBER_LIMIT = 1_000_000
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
#: What a multi-image docker-archive of ``podman save`` holds: layers and configs named by
#: their digests, the legacy per-layer folders (``layer.tar`` a link to the layer), and
#: the two index files.
_DOCKER_MEMBERS = re.compile(
    r"(?:manifest\.json|repositories|[0-9a-f]{64}\.(?:tar|json)|[0-9a-f]{64}(?:/(?:VERSION|json|layer\.tar))?)"
)
_SMALL_LIMIT = 1 << 20
#: A tag podman can give an image (``repository:tag``); others are named by their key.
_TAG = re.compile(
    r"[a-z0-9][a-z0-9._/-]*(?::[0-9]+)?(?:/[a-z0-9._-]+)*:[A-Za-z0-9_][A-Za-z0-9._-]*"
)


def ref_name(image: LockedImage) -> str:
    """The name an image has in the archive, and in the store it is loaded into: its tag,
    or (a reference that is no tag, ``registry/name@sha256:...`` of a prebuilt image)
    ``localhost/evalrepro-<layer>:<key digits>``."""
    if _TAG.fullmatch(image.tag):
        return image.tag
    return f"localhost/evalrepro-{image.layer}:{image.key.removeprefix('sha256:')[:24]}"


def is_store_image(image: LockedImage) -> bool:
    """Whether the record is an image of podman's store (not a layer inside one)."""
    return not image.tag.startswith(LAYER_TAG_PREFIX)


def loaded_name(image: LockedImage) -> str:
    """The name an image loaded from an archive gets: its Id's, never a tag the user's
    own builds use (``ref_name``), so that loading moves no name the user has."""
    return f"localhost/evalrepro-loaded:{image.image_digest.removeprefix('sha256:')}"


def _store_id(runtime: ImageStore, store: dict[str, str], image: LockedImage) -> str | None:
    """The Id the store holds for the image: its locked Id under any name (one listing for
    all), else what its name holds, or, for a reference that is no tag
    (``name@sha256:...``), what podman says."""
    if image.image_digest in store.values():
        return image.image_digest
    found = store.get(ref_name(image))
    if found is None and not _TAG.fullmatch(image.tag):
        asked = runtime.image_id(image.tag)
        found = f"sha256:{asked.removeprefix('sha256:')}" if asked else None
    return found


def _label(image: LockedImage) -> str:
    return f"image {image.layer} {short_digest(image.key)}"


def _unique(images: Sequence[LockedImage]) -> list[LockedImage]:
    """Each record once (by key), sorted by its name in the archive: a stable order."""
    by_key = {image.key: image for image in images}
    return sorted(by_key.values(), key=ref_name)


# --- export -------------------------------------------------------------------------------


def export_images(runtime: ImageStore, images: Sequence[LockedImage], dest: Path) -> list[Path]:
    """Write ``images`` (their store images; the Nix builder's layer records travel inside
    the image above them) into ``dest``: ``images.oci.tar`` (images with an OCI manifest:
    the Containerfile builder's) and/or ``images.docker.tar`` (with a Docker manifest:
    the Nix builder's); the files written, one for a lockfile of one builder.

    Every image must be in the store under its tag with its locked Id: an image built
    since from other bytes is not the run's image, and is refused naming it.
    """
    wanted = [image for image in _unique(images) if is_store_image(image)]
    if not wanted:
        raise UserError("no container image to export: the lockfile records none")
    names: dict[str, LockedImage] = {}
    for image in wanted:
        other = names.setdefault(ref_name(image), image)
        if other is not image:
            raise UserError(f"{_label(image)} and {_label(other)} have one tag, {image.tag}")
    store = runtime.ids()
    for image in wanted:
        found = _store_id(runtime, store, image)
        if found is None:
            raise UserError(
                f"{_label(image)} ({image.tag}) is not in {runtime.tool}'s store: build the run's "
                "images first (evalrepro run --lockfile)"
            )
        if found != image.image_digest:
            raise UserError(
                f"{_label(image)}: the store's {image.tag} is {short_digest(found)}, the "
                f"lockfile says {short_digest(image.image_digest)}"
            )
    types = runtime.manifest_types([image.image_digest for image in wanted])
    oci = [image for image in wanted if types.get(image.image_digest) == MANIFEST_MEDIA_TYPE]
    docker = [image for image in wanted if image not in oci]
    dest.mkdir(parents=True, exist_ok=True)
    files = []
    with _scratch([dest, runtime.cache_dir], nameable=False) as scratch:
        if oci:
            layout = scratch / "layout"
            for image in oci:
                # By Id, not tag: what is written is the locked image even if the tag moves.
                try:
                    runtime.export_layout(image.image_digest, layout, ref_name(image))
                except StoreError as error:
                    raise UserError(f"{_label(image)}: {error}") from None
            _pack(layout, oci, dest / OCI_ARCHIVE)
            files.append(dest / OCI_ARCHIVE)
        if docker:
            saved = scratch / "saved.tar"
            # By tag where the store's tag is the locked image, else by Id (a reference
            # that is no tag; docker's store, which names an image it was brought by its
            # Id): the archive names each image by its tag either way (_repack_docker).
            references = [
                ref_name(i)
                if store.get(ref_name(i)) == i.image_digest
                else i.image_digest.removeprefix("sha256:")
                for i in docker
            ]
            try:
                runtime.save(references, saved)
            except StoreError as error:
                raise UserError(str(error)) from None
            _repack_docker(saved, docker, dest / DOCKER_ARCHIVE, runtime.tool)
            files.append(dest / DOCKER_ARCHIVE)
    for stale in {dest / OCI_ARCHIVE, dest / DOCKER_ARCHIVE} - set(files):
        stale.unlink(missing_ok=True)  # an earlier export's, of other images
    return files


def _repack_docker(saved: Path, images: list[LockedImage], target: Path, tool: str) -> None:
    """The store's docker-archive as a tar sorted by name with fixed metadata, each layer
    and config checked against its name, each image's config there, and each image named
    by its tag in ``manifest.json`` (``RepoTags``; a reference that is no tag: none)
    however the store was asked for it."""
    partial = target.with_name(f".{target.name}.partial")
    with (
        tarfile.open(saved) as source,
        partial.open("wb") as out,
        tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as tar,
    ):
        members = sorted(source.getmembers(), key=lambda m: m.name)
        names = {m.name for m in members}
        for image in images:
            if f"{image.image_digest.removeprefix('sha256:')}.json" not in names:
                raise UserError(f"{_label(image)}: {tool} saved no config for it")
        for member in members:
            if member.name.removeprefix("./") == "manifest.json" and member.isfile():
                handle = source.extractfile(member)
                assert handle is not None
                _add_bytes(tar, member.name, _named_manifest(handle.read(), images, tool))
            elif member.issym():
                info = _entry(member.name)
                info.type, info.linkname, info.mode = tarfile.SYMTYPE, member.linkname, 0o777
                tar.addfile(info)
            elif member.isdir():
                _add_directory(tar, member.name)
            elif member.isfile():
                handle = source.extractfile(member)
                assert handle is not None
                named = re.fullmatch(r"([0-9a-f]{64})\.(?:tar|json)", member.name)
                expect = f"sha256:{named.group(1)}" if named else None
                _add_file(tar, member.name, handle, member.size, expect=expect)
            else:
                raise UserError(f"{tool} saved a member that is not a file: {member.name}")
    os.replace(partial, target)


def _named_manifest(data: bytes, images: list[LockedImage], tool: str) -> bytes:
    """A docker-archive's ``manifest.json`` with each image's ``RepoTags`` its tag, its
    entries in the order of ``images`` (docker 20.10 writes them in the order of a Go map,
    which differs from one save to the next)."""
    by_config = {f"{i.image_digest.removeprefix('sha256:')}.json": i for i in images}
    rank = {config: n for n, config in enumerate(by_config)}
    try:
        entries = json.loads(data)
        for entry in entries:
            image = by_config.get(entry["Config"])
            if image is not None:
                entry["RepoTags"] = [ref_name(image)] if _TAG.fullmatch(image.tag) else []
        entries.sort(key=lambda entry: (rank.get(entry["Config"], len(rank)), entry["Config"]))
    except (ValueError, TypeError, KeyError) as error:
        raise UserError(f"{tool} saved a manifest.json that is not usable ({error})") from None
    return json.dumps(entries, separators=(",", ":")).encode()


def _pack(layout: Path, images: list[LockedImage], target: Path) -> None:
    """Re-pack podman's layout as a deterministic tar of exactly ``images``' blobs."""
    index = json.loads((layout / "index.json").read_bytes())
    pushed = {
        descriptor.get("annotations", {}).get(REF_NAME): descriptor
        for descriptor in index.get("manifests", [])
    }
    manifests = []
    blobs: set[str] = set()
    for image in images:
        descriptor = pushed.get(ref_name(image))
        if descriptor is None:
            raise UserError(f"{_label(image)}: podman wrote no manifest for it")
        manifest = json.loads(_blob(layout, descriptor["digest"]).read_bytes())
        if manifest["config"]["digest"] != image.image_digest:
            raise UserError(
                f"{_label(image)}: podman wrote config {short_digest(manifest['config']['digest'])}"
                f", not the image's Id {short_digest(image.image_digest)}"
            )
        blobs |= {descriptor["digest"], manifest["config"]["digest"]}
        blobs |= {layer["digest"] for layer in manifest["layers"]}
        manifests.append(
            {
                "mediaType": descriptor["mediaType"],
                "digest": descriptor["digest"],
                "size": descriptor["size"],
                "annotations": {REF_NAME: ref_name(image)},
            }
        )
    index_bytes = canonical_json(
        {"schemaVersion": 2, "mediaType": INDEX_MEDIA_TYPE, "manifests": manifests}
    )
    partial = target.with_name(f".{target.name}.partial")
    with (
        partial.open("wb") as out,
        tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as tar,
    ):
        _add_directory(tar, "blobs")
        _add_directory(tar, "blobs/sha256")
        for digest in sorted(blobs):
            path = _blob(layout, digest)
            with path.open("rb") as handle:
                _add_file(tar, f"blobs/sha256/{digest.removeprefix('sha256:')}", handle,
                          path.stat().st_size, expect=digest)  # fmt: skip
        _add_bytes(tar, "index.json", index_bytes)
        _add_bytes(tar, "oci-layout", OCI_LAYOUT)
    os.replace(partial, target)


def _blob(layout: Path, digest: str) -> Path:
    if not _DIGEST.fullmatch(digest):
        raise UserError(f"podman wrote a blob that is not sha256: {digest!r}")
    return layout / "blobs" / "sha256" / digest.removeprefix("sha256:")


def _entry(name: str) -> tarfile.TarInfo:
    return member_info(name)


def _add_directory(tar: tarfile.TarFile, name: str) -> None:
    info = _entry(name)
    info.type, info.mode = tarfile.DIRTYPE, 0o755
    tar.addfile(info)


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = _entry(name)
    info.size, info.mode = len(data), 0o644
    tar.addfile(info, io.BytesIO(data))


def _add_file(
    tar: tarfile.TarFile, name: str, handle: IO[bytes], size: int, expect: str | None
) -> None:
    """A file, checked against its digest on the way (what podman wrote is what it says)."""
    info = _entry(name)
    info.size, info.mode = size, 0o644
    hashing = _HashingReader(handle)
    tar.addfile(info, hashing)
    if expect is not None and hashing.digest() != expect:
        raise UserError(f"blob {short_digest(expect)} that podman wrote does not match its digest")


class _HashingReader:
    def __init__(self, handle: IO[bytes]) -> None:
        self.handle = handle
        self.hash = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.hash.update(data)
        return data

    def digest(self) -> str:
        return f"sha256:{self.hash.hexdigest()}"


#: A path podman can name an image after: ``podman pull oci:PATH:NAME`` stores the image
#: as ``localhost/PATH:latest`` (podman 4.3), so each part of PATH must be a valid
#: repository component (lower case, no leading dot), and no ':' (podman splits there).
_NAMEABLE_PATH = re.compile(r"(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)+")


@contextmanager
def _scratch(candidates: Sequence[Path], *, nameable: bool) -> Iterator[Path]:
    """A new folder in the first of ``candidates`` podman can use, removed afterwards."""
    for parent in (*candidates, Path(tempfile.gettempdir()), Path("/var/tmp")):
        parent = parent.absolute()
        usable = _NAMEABLE_PATH.fullmatch(str(parent)) if nameable else ":" not in str(parent)
        if usable:
            break
    else:
        need = "a lower-case path without dot folders" if nameable else "a path without ':'"
        raise UserError(f"podman needs {need} for an image layout; none of {candidates} is one")
    parent.mkdir(parents=True, exist_ok=True)
    path = parent / f"evalrepro-images-{secrets.token_hex(8)}"
    path.mkdir()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# --- load ---------------------------------------------------------------------------------


def load_images(
    runtime: ImageStore,
    archive: Path | Sequence[Path],
    images: Sequence[LockedImage],
    *,
    scratch: Path | None = None,
) -> list[str]:
    """Load ``images`` from ``archive`` (what :func:`export_images` wrote: an OCI layout
    tar, a docker-archive, or both) into podman's store, each under a name of its Id's
    (``loaded_name``): a name the user's own builds use is never moved, so their runs
    stay resumable (a locked plan finds a layer by its Id). One problem line per image
    whose Id is not the locked one, or that is missing.

    An image whose locked Id the store already holds, under any name, is not read again.
    A malformed archive (not an OCI layout or docker-archive, a member outside it, a link
    out) is a UserError; a blob whose bytes do not match its digest is a problem of each
    image that needs it, and those images are not loaded. An OCI layout is unpacked once
    (as big as the archive) into ``scratch`` if podman can use that path (see
    ``_NAMEABLE_PATH``), else the cache or the temp folder.
    """
    archives = [archive] if isinstance(archive, Path) else list(archive)
    wanted = _unique(images)
    store_images = [image for image in wanted if is_store_image(image)]
    problems: dict[str, str] = {}
    store = runtime.ids()
    missing = [i for i in store_images if _store_id(runtime, store, i) != i.image_digest]
    if missing:
        candidates = [*([scratch] if scratch else []), runtime.cache_dir]
        with _scratch(candidates, nameable=True) as folder:
            sources = [
                _open_archive(path, folder / f"archive-{number}")
                for number, path in enumerate(archives)
            ]
            for image in missing:
                source = next((s for s in sources if s.holds(image)), None)
                if source is None:
                    problem: str | None = f"not in the archive (no image named {ref_name(image)})"
                else:
                    problem = source.pull(runtime, image)
                if problem is not None:
                    problems[image.key] = f"{_label(image)}: {problem}"
        store = runtime.ids()
    for image in store_images:
        if image.key in problems:
            continue
        found = _store_id(runtime, store, image)
        if found is None:
            problems[image.key] = f"{_label(image)}: not in {runtime.tool}'s store after loading"
        elif found != image.image_digest:
            problems[image.key] = (
                f"{_label(image)}: loaded Id {short_digest(found)}, the lockfile says "
                f"{short_digest(image.image_digest)}"
            )
    for image in wanted:
        if not is_store_image(image):
            problem = _layer_problem(runtime, image, wanted, problems)
            if problem is not None:
                problems[image.key] = f"{_label(image)}: {problem}"
    return [problems[image.key] for image in wanted if image.key in problems]


def _open_archive(archive: Path, folder: Path) -> _OciLayout | _DockerArchive:
    """The archive read and checked, by what its first member says it is."""
    first = None
    try:
        with tarfile.open(archive, mode="r:") as tar:
            for member in tar:
                first = member.name.removeprefix("./").rstrip("/")
                if first not in ("", "."):
                    break
    except OSError as error:
        raise UserError(f"cannot read the image archive {archive}: {error.strerror}") from None
    except (tarfile.TarError, EOFError) as error:
        raise UserError(f"{archive} is not a usable tar archive ({error})") from None
    folder.mkdir()
    if first is not None and _DOCKER_MEMBERS.fullmatch(first):
        return _DockerArchive(archive, folder)
    return _OciLayout(archive, folder)


def _loaded(runtime: ImageStore, image: LockedImage, load: Callable[[], str]) -> str | None:
    """``load()`` (one image into the store: its Id), checked to give the locked Id, then
    named after it (the name the archive gives it put back as it was); why not."""
    try:
        before = runtime.image_id(ref_name(image))
        problem = None
        try:
            loaded = "sha256:" + load().removeprefix("sha256:")
        except StoreError as error:
            problem = f"{runtime.tool} cannot load it: {error}"
        if problem is None and loaded == image.image_digest:
            # Its own name first: a store that drops an image with its last name (docker's)
            # keeps it when the archive's name is taken off below.
            runtime.tag(loaded.removeprefix("sha256:"), loaded_name(image))
        # A docker-archive names what it loads after its RepoTags: the user's tag.
        after = runtime.image_id(ref_name(image))
        if after != before and after is not None:
            if before is None:
                runtime.untag(after, ref_name(image))
            else:
                runtime.tag(before, ref_name(image))
        if problem is not None:
            return problem
        if loaded != image.image_digest:
            locked = short_digest(image.image_digest)
            return f"loaded Id {short_digest(loaded)}, the lockfile says {locked}"
    except StoreError as error:
        return f"{runtime.tool} cannot load it: {error}"
    return None


def _unusable(needed: set[str], bad: set[str], present: Callable[[str], bool]) -> str | None:
    """Why an image whose blobs are ``needed`` cannot be loaded, if it cannot."""
    damaged = sorted(bad & needed)
    absent = sorted(d for d in needed if not _DIGEST.fullmatch(d) or not present(d))
    if damaged or absent:
        which = damaged[0] if damaged else absent[0]
        what = "does not match its digest" if damaged else "is missing"
        return f"blob {short_digest(which)} in the archive {what}; not loaded"
    return None


class _OciLayout:
    """An OCI layout tar, unpacked (checked) into a folder podman pulls from."""

    def __init__(self, archive: Path, folder: Path) -> None:
        self.layout = folder / "layout"
        self.bad = unpack_layout(archive, self.layout)
        self.index = _index(self.layout)

    def holds(self, image: LockedImage) -> bool:
        return ref_name(image) in self.index

    def pull(self, runtime: ImageStore, image: LockedImage) -> str | None:
        descriptor = self.index[ref_name(image)]
        try:
            manifest = _read_json(_blob(self.layout, descriptor["digest"]), self.bad)
            config = manifest["config"]["digest"]
            layers = [str(layer["digest"]) for layer in manifest["layers"]]
        except (KeyError, TypeError, UserError) as error:
            return f"the archive's manifest is not usable ({error})"
        if config != image.image_digest:
            return (
                f"the archive's image has Id {short_digest(str(config))}, the lockfile says "
                f"{short_digest(image.image_digest)}"
            )
        needed = {str(descriptor["digest"]), str(config), *layers}
        problem = _unusable(needed, self.bad, lambda d: _blob(self.layout, d).is_file())
        if problem is not None:
            return problem
        return _loaded(
            runtime, image, lambda: runtime.load_from_layout(self.layout, ref_name(image))
        )


class _DockerArchive:
    """A multi-image docker-archive, checked member by member; podman reads it in place."""

    def __init__(self, archive: Path, folder: Path) -> None:
        self.bad, self.entries, self.members = check_docker_archive(archive)
        # podman's ``docker-archive:PATH:@N`` splits at ':': a link from a path without one.
        self.path = folder / "images.docker.tar"
        self.path.symlink_to(archive.absolute())

    def _number(self, image: LockedImage) -> int | None:
        config = f"{image.image_digest.removeprefix('sha256:')}.json"
        return next((n for n, e in enumerate(self.entries) if e["Config"] == config), None)

    def holds(self, image: LockedImage) -> bool:
        return self._number(image) is not None

    def pull(self, runtime: ImageStore, image: LockedImage) -> str | None:
        number = self._number(image)
        assert number is not None
        entry = self.entries[number]
        needed = {f"sha256:{name.split('.')[0]}" for name in (entry["Config"], *entry["Layers"])}
        problem = _unusable(
            needed,
            self.bad,
            lambda d: (
                f"{d.removeprefix('sha256:')}.tar" in self.members
                or f"{d.removeprefix('sha256:')}.json" in self.members
            ),
        )
        return problem or _loaded(
            runtime, image, lambda: runtime.load_from_archive(self.path, number)
        )


def check_docker_archive(archive: Path) -> tuple[set[str], list[dict[str, Any]], set[str]]:
    """Read a docker-archive through once: the digests of its layers and configs whose
    bytes do not match their names, its ``manifest.json`` entries, its regular members.

    Untrusted input: only what ``podman save -m`` writes (:data:`_DOCKER_MEMBERS`), each
    name once; ``<hex>/layer.tar`` only as a link to ``../<hex>.tar``; nothing else a
    link, device or sparse file; the small files bounded. Nothing is unpacked.
    """
    seen: set[str] = set()
    regular: set[str] = set()
    bad: set[str] = set()
    manifest: Any = None
    try:
        with tarfile.open(archive, mode="r:") as tar:
            for count, member in enumerate(tar):
                name = member.name.removeprefix("./").rstrip("/")
                if count >= _MEMBER_LIMIT:
                    raise UserError(f"{archive}: more than {_MEMBER_LIMIT} members")
                if name in ("", ".") and member.isdir():
                    continue
                if not _DOCKER_MEMBERS.fullmatch(name) or name in seen:
                    raise UserError(
                        f"{archive}: member {member.name[:200]!r} is not part of a docker-archive"
                    )
                seen.add(name)
                if name.endswith("/layer.tar"):
                    if not (
                        member.issym() and re.fullmatch(r"\.\./[0-9a-f]{64}\.tar", member.linkname)
                    ):
                        raise UserError(f"{archive}: member {name!r} is not a link to a layer")
                    continue
                if member.isdir() and re.fullmatch(r"[0-9a-f]{64}", name):
                    continue
                if member.type not in (tarfile.REGTYPE, tarfile.AREGTYPE):
                    raise UserError(f"{archive}: member {name!r} is not a regular file")
                named = re.fullmatch(r"([0-9a-f]{64})\.(?:tar|json)", name)
                if named is None and member.size > _JSON_LIMIT:
                    raise UserError(f"{archive}: member {name!r} is too big")
                handle = tar.extractfile(member)
                assert handle is not None
                if named is not None:
                    if _sha256_stream(handle) != named.group(1):
                        bad.add(f"sha256:{named.group(1)}")
                    regular.add(name)
                elif name == "manifest.json":
                    manifest = json.loads(handle.read())
    except (tarfile.TarError, EOFError) as error:
        raise UserError(f"{archive} is not a usable tar archive ({error})") from None
    except ValueError as error:
        raise UserError(f"{archive}: its manifest.json is not JSON ({error})") from None
    entries = manifest if isinstance(manifest, list) else None
    if entries is None or not all(_docker_entry(entry) for entry in entries):
        raise UserError(f"{archive} is not a docker-archive (no usable manifest.json)")
    return bad, entries, regular


def _sha256_stream(handle: IO[bytes]) -> str:
    digest = hashlib.sha256()
    for block in iter(lambda: handle.read(1 << 20), b""):
        digest.update(block)
    return digest.hexdigest()


def _docker_entry(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("Config"), str)
        and re.fullmatch(r"[0-9a-f]{64}\.json", entry["Config"]) is not None
        and isinstance(entry.get("Layers"), list)
        and all(
            isinstance(x, str) and re.fullmatch(r"[0-9a-f]{64}\.tar", x) for x in entry["Layers"]
        )
    )


def _layer_problem(
    runtime: ImageStore, layer: LockedImage, images: list[LockedImage], problems: dict[str, str]
) -> str | None:
    """A Nix layer record: its diff id must be a layer of each loaded image above it."""
    above = [i for i in images if is_store_image(i) and layer.key in _chain_keys(i, images)]
    if not above:
        return "no image in the lockfile is built on it"
    for image in above:
        if image.key in problems:
            return f"its image {short_digest(image.key)} did not load"
        try:
            diff_ids = runtime.layers(image.tag)
        except (StoreError, ValueError):
            diff_ids = []
        if layer.image_digest not in diff_ids:
            return f"layer {short_digest(layer.image_digest)} is not in the loaded {image.tag}"
    return None


def _chain_keys(image: LockedImage, images: list[LockedImage]) -> set[str]:
    by_key = {i.key: i for i in images}
    keys, key = set(), image.parent_key
    while key and key in by_key and key not in keys:
        keys.add(key)
        key = by_key[key].parent_key
    return keys


def _index(layout: Path) -> dict[str, dict[str, Any]]:
    """The layout's images by name (each name once, each an image manifest)."""
    index = _read_json(layout / "index.json", set())
    manifests = index.get("manifests") if isinstance(index, dict) else None
    if not isinstance(manifests, list):
        raise UserError("the image archive's index.json lists no manifests")
    found: dict[str, dict[str, Any]] = {}
    for descriptor in manifests:
        if not isinstance(descriptor, dict):
            raise UserError(
                "the image archive's index.json holds a descriptor that is not an object"
            )
        name = (descriptor.get("annotations") or {}).get(REF_NAME)
        if descriptor.get("mediaType") != MANIFEST_MEDIA_TYPE or not isinstance(name, str):
            raise UserError(
                "the image archive's index.json holds a descriptor that is not a named image "
                f"manifest ({str(descriptor.get('digest'))[:80]})"
            )
        if not _DIGEST.fullmatch(str(descriptor.get("digest"))):
            raise UserError(f"the image archive names {name} by a digest that is not sha256")
        if found.setdefault(name, descriptor) is not descriptor:
            raise UserError(f"the image archive names two images {name}")
    return found


def _read_json(path: Path, bad: set[str]) -> Any:
    digest = f"sha256:{path.name}" if path.parent.name == "sha256" else None
    if digest in bad:
        raise UserError(f"blob {short_digest(digest or '')} does not match its digest")
    try:
        if path.stat().st_size > _JSON_LIMIT:
            raise UserError(f"the image archive's {path.name} is too big for a JSON file")
        return json.loads(path.read_bytes())
    except FileNotFoundError:
        raise UserError(f"the image archive has no {path.name}") from None
    except ValueError as error:
        raise UserError(f"the image archive's {path.name} is not JSON ({error})") from None


def unpack_layout(archive: Path, dest: Path) -> set[str]:
    """Unpack an OCI layout tar into ``dest`` (created); the digests of blobs whose bytes
    do not match their names (removed, not unpacked).

    Untrusted input: only ``oci-layout``, ``index.json`` and ``blobs/sha256/<64 hex>``,
    regular files (no links, devices or sparse files) and directories; each name once;
    written by us into folders we made, never through a link; at most the archive's own
    size in all (regular members' bytes are in the archive). Stricter than tarfile's
    "data" filter, which is applied too where this Python has it (3.11.4 and later).
    """
    try:
        size = archive.stat().st_size
        handle = archive.open("rb")
    except OSError as error:
        raise UserError(f"cannot read the image archive {archive}: {error.strerror}") from None
    dest.mkdir(parents=True)
    (dest / "blobs" / "sha256").mkdir(parents=True)
    seen: set[str] = set()
    bad: set[str] = set()
    written = 0
    data_filter = getattr(tarfile, "data_filter", None)
    try:
        with handle, tarfile.open(fileobj=handle, mode="r:") as tar:
            for count, member in enumerate(tar):
                # A tar made with ``tar -C LAYOUT .`` names its members ./blobs/...
                name = member.name.removeprefix("./").rstrip("/")
                if count >= _MEMBER_LIMIT:
                    raise UserError(f"{archive}: more than {_MEMBER_LIMIT} members")
                if name in ("", ".") and member.isdir():
                    continue
                if not _MEMBERS.fullmatch(name) or name in seen:
                    raise UserError(
                        f"{archive}: member {member.name[:200]!r} is not part of an OCI layout"
                    )
                seen.add(name)
                if data_filter is not None:
                    data_filter(member, str(dest))
                if member.isdir() and name in ("blobs", "blobs/sha256"):
                    continue
                if member.type not in (tarfile.REGTYPE, tarfile.AREGTYPE) or name in (
                    "blobs",
                    "blobs/sha256",
                ):
                    raise UserError(f"{archive}: member {name!r} is not a regular file")
                written += member.size
                if written > size:
                    raise UserError(f"{archive}: its members hold more bytes than the archive")
                source = tar.extractfile(member)
                assert source is not None
                got = _write_new(dest / name, source)
                if name.startswith("blobs/") and got != f"sha256:{Path(name).name}":
                    (dest / name).unlink()
                    bad.add(f"sha256:{Path(name).name}")
    except (tarfile.TarError, EOFError) as error:
        raise UserError(f"{archive} is not a usable tar archive ({error})") from None
    if "index.json" not in seen:
        raise UserError(f"{archive} is not an OCI image layout (no index.json)")
    return bad


def _write_new(path: Path, source: IO[bytes]) -> str:
    """Copy ``source`` into a new file ``path`` (never through a link); its sha256."""
    digest = hashlib.sha256()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH)
    with os.fdopen(fd, "wb") as out:
        for block in iter(lambda: source.read(1 << 20), b""):
            digest.update(block)
            out.write(block)
    return f"sha256:{digest.hexdigest()}"
