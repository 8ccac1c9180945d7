"""A layer's tar as content: what the storage driver adds to it is not content.

Rootless podman's overlay driver marks copied-up directories with overlayfs's own
extended attributes (``user.overlay.origin``, ``user.overlay.impure``: an inode's file
handle and a cache hint), and podman 4.3 copies them into the layer's tar. Root's
overlay keeps the same marks in ``trusted.overlay.*``, which never reach a tar. So two
builds of the same inputs give the same names, bytes, modes, owners and times, and other
layer digests, by mode. These attributes are invisible inside a container (overlayfs
hides its private namespace from the merged view): dropping them changes nothing the
code under test can see, and makes the image Id the same in both modes.

``normalise`` rewrites a freshly built image's top layer without them, gives its config
a history of evalrepro's own (one entry a layer: buildah's names the parent as this
store calls it, and without any entry, buildah cannot build twice on the image), and
loads the result under the layer's tag. The
rewrite is byte-level: every other header and data block is copied as is, and a PAX
header left with no record is dropped, which is what podman's Go tar writer emits for
an entry without extended attributes. The parents are never exported again: they are
normalised already (each was built here), and an OCI layout that lists them by digest,
with files of their size standing in for them, is enough for podman to reuse them.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from evalrepro import atomic
from evalrepro.runtimes.store import ImageStore, StoreError

BLOCK = 512
#: Extended-attribute namespaces that belong to overlayfs, not to the files.
PRIVATE_XATTRS = ("user.overlay.", "trusted.overlay.")
#: How PAX records name an extended attribute (Go and GNU tar; libarchive).
XATTR_RECORDS = ("SCHILY.xattr.", "LIBARCHIVE.xattr.")
#: What the layer keys say about how a layer on a parent is made, a new rule a new layer:
#: overlayfs's attributes stripped, and the history rewritten: the parent's, then one
#: entry naming the layer's tag. Buildah's own entries name "FROM <the parent's first name
#: in this store>": the same parent under another name, as happens when two tags hold one
#: image, would give another image Id. None at all is no answer either: buildah (1.28)
#: refuses to build a second step on an image whose history lists fewer layers than it has.
NORMALISATION = {
    "version": 2,
    "strip_xattrs": list(PRIVATE_XATTRS),
    "history": "the parent's, then one entry: created 1970-01-01T00:00:00Z, created_by the tag",
}
#: The one history entry of a normalised layer (``created`` as ``--timestamp 0`` writes it).
EPOCH = "1970-01-01T00:00:00Z"
#: A PAX header larger than this is not one podman writes.
MAX_PAX_HEADER = 1 << 20
#: Entry types whose size field announces no data (POSIX; as Go's reader treats them).
HEADER_ONLY = frozenset(b"123456")
OCI_TAR = "application/vnd.oci.image.layer.v1.tar"
OCI_TAR_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"


class LayerError(Exception):
    """A layer that cannot be read as the tar podman writes."""


def strip_private_xattrs(source: BinaryIO, target: BinaryIO) -> int:
    """Copy the tar ``source`` to ``target`` without overlayfs's attributes; how many went."""
    removed = 0
    while True:
        header = _read(source, BLOCK, allow_end=True)
        if header is None:
            return removed  # a tar cut short of its end blocks: copied as far as it goes
        if header == bytes(BLOCK):
            target.write(header)
            shutil.copyfileobj(source, target)  # the end blocks and the padding
            return removed
        _check_sum(header)
        size = _size(header)
        typeflag = header[156]
        padded = 0 if typeflag in HEADER_ONLY else -(-size // BLOCK) * BLOCK
        if typeflag == ord("x"):
            if size > MAX_PAX_HEADER:
                raise LayerError(f"a PAX header of {size} bytes")
            data = _read(source, padded)
            assert data is not None
            records = _records(data[:size])
            kept = [record for key, record in records if not _private(key)]
            removed += len(records) - len(kept)
            if len(kept) == len(records):
                target.write(header + data)
            elif kept:
                body = b"".join(kept)
                target.write(_with_size(header, len(body)))
                target.write(body + bytes(-len(body) % BLOCK))
            continue  # a PAX header with nothing left is dropped
        target.write(header)
        _copy(source, target, padded)


def _private(key: str) -> bool:
    for prefix in XATTR_RECORDS:
        if key.startswith(prefix):
            return key.removeprefix(prefix).startswith(PRIVATE_XATTRS)
    return False


def _records(data: bytes) -> list[tuple[str, bytes]]:
    """A PAX header's records, each as (key, its raw bytes)."""
    records, at = [], 0
    while at < len(data):
        space = data.find(b" ", at)
        if space < 0 or not data[at:space].isdigit():
            raise LayerError("a malformed PAX record")
        length = int(data[at:space])
        record = data[at : at + length]
        if length <= space - at or not record.endswith(b"\n") or b"=" not in record:
            raise LayerError("a malformed PAX record")
        key = record[space - at + 1 : record.index(b"=")].decode("utf-8", "replace")
        records.append((key, record))
        at += length
    return records


def _size(header: bytes) -> int:
    field = header[124:136]
    if field[0] & 0x80:  # base-256, for sizes octal cannot hold
        return int.from_bytes(field[1:], "big")
    digits = field.rstrip(b"\0 ").lstrip(b" ")
    try:
        return int(digits or b"0", 8)
    except ValueError:
        raise LayerError("a tar header with an unreadable size") from None


def _checksum(header: bytes) -> int:
    return sum(header[:148]) + 8 * 32 + sum(header[156:])


def _check_sum(header: bytes) -> None:
    stored = header[148:156].rstrip(b"\0 ").lstrip(b" ")
    try:
        ok = int(stored or b"-1", 8) == _checksum(header)
    except ValueError:
        ok = False
    if not ok:
        raise LayerError("a tar header whose checksum does not match")


def _with_size(header: bytes, size: int) -> bytes:
    """``header`` with another size, written as Go's and Python's tar writers write it."""
    block = bytearray(header)
    block[124:136] = b"%011o\0" % size
    block[148:156] = b"%06o\0 " % _checksum(bytes(block))
    return bytes(block)


def _read(source: BinaryIO, size: int, *, allow_end: bool = False) -> bytes | None:
    data = source.read(size)
    if len(data) < size:
        if allow_end and not data:
            return None
        raise LayerError("a tar cut short inside an entry")
    return data


def _copy(source: BinaryIO, target: BinaryIO, size: int) -> None:
    while size:
        chunk = source.read(min(size, 1 << 20))
        if not chunk:
            raise LayerError("a tar cut short inside an entry")
        target.write(chunk)
        size -= len(chunk)


# --- images --------------------------------------------------------------------------


class Normaliser:
    """Rewrites built images so that their top layer carries no overlayfs attribute.

    ``sizes`` keeps each normalised layer's size by its digest: the stand-ins that let
    podman skip exporting the parents again. A layer without a known size is exported
    (slower, as correct)."""

    def __init__(self, store: ImageStore, sizes: Path) -> None:
        self.store = store
        self.sizes = sizes

    def normalise(self, built: str, tag: str, scratch: Path, parent: str) -> None:
        """Give ``tag`` the image ``built`` (made on the image ``parent``, built without
        history) with its top layer and history normalised; drop ``built``."""
        layout = scratch / "export"
        diff_ids = self.store.layers(built)
        _layout(layout)
        for diff_id in diff_ids[:-1]:
            size = self._known_size(diff_id)
            if size is not None:
                with (layout / "blobs" / "sha256" / diff_id.removeprefix("sha256:")).open(
                    "wb"
                ) as standin:
                    standin.truncate(size)
        self.store.export_layout(built, layout, "built")
        manifest_blob = _blob(layout, json.loads((layout / "index.json").read_bytes()))
        manifest = json.loads(manifest_blob.read_bytes())
        config_bytes = _blob_path(layout, manifest["config"]["digest"]).read_bytes()
        for diff_id, layer in zip(diff_ids[:-1], manifest["layers"], strict=False):
            if self._known_size(diff_id) is None:  # a parent from before: learnt once
                self._remember(diff_id, _uncompressed_size(layout, layer))
        top = manifest["layers"][-1]
        _, digest, size = self._strip(layout, top, scratch / "layer.tar")
        self._remember(digest, size)
        config = json.loads(config_bytes)
        if config["rootfs"]["diff_ids"] != diff_ids:
            raise LayerError("the image config does not list the layers podman reports")
        config["rootfs"]["diff_ids"][-1] = digest
        config["history"] = [*self._history(parent), {"created": EPOCH, "created_by": tag}]
        # Key order as buildah wrote it; the bytes are this function's, the same everywhere.
        config_bytes = json.dumps(config, separators=(",", ":")).encode()
        layer = (scratch / "layer.tar", digest, size)
        self._load(scratch / "load", manifest, config_bytes, layer, tag)
        self.store.remove(built)

    def _history(self, parent: str) -> list[dict]:
        """The parent's history, as its config holds it (one entry per layer and more)."""
        history = self.store.history(parent)
        if not isinstance(history, list) or not all(isinstance(h, dict) for h in history):
            raise LayerError(f"the parent {parent[:19]} has a history that is not a list")
        return history

    def _strip(self, layout: Path, top: dict, out: Path) -> tuple[int, str, int]:
        """Write the top layer, normalised and uncompressed, to ``out``: what went, its digest
        and size."""
        hasher = _Hashing(out.open("wb"))
        with _layer_tar(layout, top) as source, hasher:
            removed = strip_private_xattrs(source, hasher)
        return removed, f"sha256:{hasher.digest.hexdigest()}", hasher.size

    def _load(
        self, where: Path, manifest: dict, config: bytes, layer: tuple[Path, str, int], tag: str
    ) -> None:
        """Pull the rewritten image from an OCI layout holding only what is new in it."""
        _layout(where)
        blobs = where / "blobs" / "sha256"
        config_digest = "sha256:" + hashlib.sha256(config).hexdigest()
        (blobs / config_digest.removeprefix("sha256:")).write_bytes(config)
        path, digest, size = layer
        os.replace(path, blobs / digest.removeprefix("sha256:"))
        manifest = {
            **manifest,
            "config": {**manifest["config"], "digest": config_digest, "size": len(config)},
            "layers": [
                *manifest["layers"][:-1],
                {"mediaType": OCI_TAR, "digest": digest, "size": size},
            ],
        }
        manifest_bytes = json.dumps(manifest, separators=(",", ":")).encode()
        manifest_digest = "sha256:" + hashlib.sha256(manifest_bytes).hexdigest()
        (blobs / manifest_digest.removeprefix("sha256:")).write_bytes(manifest_bytes)
        index = {
            "schemaVersion": 2,
            "manifests": [
                {
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": manifest_digest,
                    "size": len(manifest_bytes),
                    # podman names the image it pulls after this
                    "annotations": {"org.opencontainers.image.ref.name": tag},
                }
            ],
        }
        (where / "index.json").write_text(json.dumps(index))
        # An oci-archive, not the folder: podman names an image loaded from a folder after
        # its path, and one from an archive after the name in its index.
        archive = where.with_suffix(".tar")
        with tarfile.open(archive, "w") as tar:
            for path in sorted(where.rglob("*")):
                tar.add(path, arcname=str(path.relative_to(where)), recursive=False)
        self.store.load(archive)
        image_id = self.store.image_id(tag)
        if image_id != config_digest.removeprefix("sha256:"):
            raise StoreError(f"the normalised image loaded as {image_id or 'nothing'}")

    def _known_size(self, diff_id: str) -> int | None:
        try:
            return int((self.sizes / diff_id.removeprefix("sha256:")).read_text())
        except (OSError, ValueError):
            return None

    def _remember(self, diff_id: str, size: int) -> None:
        self.sizes.mkdir(parents=True, exist_ok=True)
        atomic.write_text(self.sizes / diff_id.removeprefix("sha256:"), str(size))


class _Hashing:
    """A file that hashes and counts what is written to it."""

    def __init__(self, file: BinaryIO) -> None:
        self.file = file
        self.digest = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        self.size += len(data)
        return self.file.write(data)

    def __enter__(self) -> _Hashing:
        return self

    def __exit__(self, *exc: object) -> None:
        self.file.close()


def _layout(path: Path) -> None:
    (path / "blobs" / "sha256").mkdir(parents=True)
    (path / "oci-layout").write_text('{"imageLayoutVersion":"1.0.0"}')
    (path / "index.json").write_text('{"schemaVersion":2,"manifests":[]}')


def _blob_path(layout: Path, digest: str) -> Path:
    algorithm, _, hexdigest = digest.partition(":")
    if algorithm != "sha256" or len(hexdigest) != 64:
        raise LayerError(f"an OCI layout naming a blob {digest!r}")
    return layout / "blobs" / "sha256" / hexdigest


def _blob(layout: Path, index: dict) -> Path:
    manifests = index.get("manifests") or []
    if len(manifests) != 1:
        raise LayerError(f"an export holding {len(manifests)} images")
    return _blob_path(layout, manifests[0]["digest"])


@contextmanager
def _layer_tar(layout: Path, layer: dict) -> Iterator[BinaryIO]:
    """A layer blob of the layout, read as its uncompressed tar."""
    media = layer.get("mediaType", "")
    if media not in (OCI_TAR, OCI_TAR_GZIP):
        raise LayerError(f"a layer of type {media or 'unknown'}")
    with _blob_path(layout, layer["digest"]).open("rb") as raw:
        if media == OCI_TAR_GZIP:
            with gzip.open(raw) as tar:
                yield tar  # type: ignore[misc]
        else:
            yield raw


def _uncompressed_size(layout: Path, layer: dict) -> int:
    size = 0
    with _layer_tar(layout, layer) as tar:
        for chunk in iter(lambda: tar.read(1 << 20), b""):
            size += len(chunk)
    return size
