"""A run folder into an object store and back.

:func:`store_run` uploads every regular file of a run folder, each once by its sha256
(those already stored are skipped: an interrupted upload resumes where it stopped), and
then the manifest (:class:`~evalrepro.records.store.StoredRun`), which is uploaded last:
a run whose manifest is stored has every file stored. Left out: the viewer's ``view/``
(made again by ``evalrepro view``), lock files and the temporary files of atomic writes.
A symbolic link or anything but a folder or a regular file is refused, so nothing
outside the run folder is ever read.

:func:`materialize_run` rebuilds the folder from a manifest's digest: each path checked
(relative, no ``..``), each file's size and sha256 checked, the whole folder appearing
under its name only once every file is there.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path

from evalrepro.digest import canonical_json
from evalrepro.errors import UserError
from evalrepro.files import NotRegular, open_regular
from evalrepro.plan.lockfile import LOCKFILE_NAME
from evalrepro.records.base import parse_record
from evalrepro.records.store import StoredFile, StoredRun, checked_relative_path
from evalrepro.report.view import VIEW_DIR
from evalrepro.store.objects import ObjectStore, StoreError

#: Bounds on what one run may hold (a run folder is written by containers' outputs too).
MAX_FILES = 200_000
MAX_FILE_SIZE = 16 << 30
MAX_TOTAL_SIZE = 256 << 30
#: The largest manifest read back.
MAX_MANIFEST_SIZE = 64 << 20

#: Called for each file of the run, in order: (its path in the run, uploaded now?).
Progress = Callable[[str, bool], None]


def _left_out(parts: tuple[str, ...]) -> bool:
    """Not part of what a run is: the viewer's folder, a lock file (``.evalrepro.lock``;
    ``lockfile.lock.json`` is the plan, and kept), an atomic write's temporary file."""
    name = parts[-1]
    return (
        (len(parts) == 1 and name == VIEW_DIR)
        or name.endswith(".lock")
        or (name.startswith(".") and name.endswith(".tmp"))
    )


def run_files(run_dir: Path) -> list[tuple[str, Path]]:
    """(path in the run, file) of every file :func:`store_run` stores, by path."""
    if not (run_dir / LOCKFILE_NAME).is_file():
        raise StoreError(f"{run_dir}: not a run directory (no {LOCKFILE_NAME})")
    found: list[tuple[str, Path]] = []
    pending: list[tuple[Path, tuple[str, ...]]] = [(run_dir, ())]
    while pending:
        folder, above = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as error:
            raise StoreError(f"{folder}: cannot list the folder ({error.strerror})") from None
        for entry in entries:
            parts = (*above, entry.name)
            if _left_out(parts):
                continue
            relative = "/".join(parts)
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISLNK(mode):
                raise StoreError(f"{run_dir}: {relative} is a symbolic link: not stored")
            if stat.S_ISDIR(mode):
                pending.append((Path(entry.path), parts))
            elif stat.S_ISREG(mode):
                try:
                    checked_relative_path(relative)
                except ValueError as error:
                    raise StoreError(f"{run_dir}: {error}") from None
                found.append((relative, Path(entry.path)))
                if len(found) > MAX_FILES:
                    raise StoreError(f"{run_dir}: more than {MAX_FILES} files: not stored")
            else:
                raise StoreError(f"{run_dir}: {relative} is not a regular file: not stored")
    return sorted(found)


def _hash_file(path: Path, relative: str) -> tuple[str, int]:
    """(sha256 digest, size) of a regular file, read through no link, bounded."""
    try:
        handle = open_regular(path)
    except OSError as error:
        raise StoreError(f"{relative}: cannot read ({error.strerror})") from None
    except NotRegular:
        raise StoreError(f"{relative}: not a regular file: not stored") from None
    with handle:
        hasher = hashlib.sha256()
        size = 0
        while chunk := handle.read(1 << 20):
            size += len(chunk)
            if size > MAX_FILE_SIZE:
                raise StoreError(f"{relative}: larger than {MAX_FILE_SIZE >> 30} GiB: not stored")
            hasher.update(chunk)
    return "sha256:" + hasher.hexdigest(), size


def store_run(
    run_dir: Path, store: ObjectStore, progress: Progress | None = None
) -> tuple[StoredRun, str]:
    """Store every file of ``run_dir`` that is not stored yet, then its manifest: the
    manifest and the manifest's digest. Run again after an interruption, it uploads only
    what the first did not."""
    run_dir = Path(run_dir)
    files: list[StoredFile] = []
    total = 0
    with store.uploading():
        for relative, path in run_files(run_dir):
            digest, size = _hash_file(path, relative)
            total += size
            if total > MAX_TOTAL_SIZE:
                raise StoreError(f"{run_dir}: more than {MAX_TOTAL_SIZE >> 30} GiB: not stored")
            uploaded = store.put_file(path, digest, size)
            files.append(StoredFile(path=relative, sha256=digest, size=size))
            if progress is not None:
                progress(relative, uploaded)
        manifest = StoredRun(files=files)
        data = canonical_json(manifest.model_dump(mode="json"))
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        with tempfile.TemporaryDirectory(prefix="evalrepro-manifest-") as scratch:
            path = Path(scratch) / "manifest.json"
            path.write_bytes(data)
            store.put_file(path, digest, len(data))
    return manifest, digest


def read_manifest(store: ObjectStore, manifest_digest: str) -> StoredRun:
    """The manifest stored as ``manifest_digest`` (its sha256 checked), or one line."""
    data = store.read_bytes(manifest_digest, MAX_MANIFEST_SIZE)
    where = f"object store {store.url}: {manifest_digest}"
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise StoreError(f"{where}: not a readable StoredRun manifest ({error})") from None
    try:
        return parse_record(raw, StoredRun, where=where)
    except UserError as error:
        raise StoreError(str(error)) from None


def materialize_run(store: ObjectStore, manifest_digest: str, dest: Path) -> Path:
    """The run folder of ``manifest_digest`` rebuilt at ``dest`` (which must not exist, or
    be an empty folder), every file checked; ``dest``."""
    manifest = read_manifest(store, manifest_digest)
    if len(manifest.files) > MAX_FILES:
        raise StoreError(f"{manifest_digest}: more than {MAX_FILES} files: not fetched")
    if sum(f.size for f in manifest.files) > MAX_TOTAL_SIZE:
        raise StoreError(f"{manifest_digest}: more than {MAX_TOTAL_SIZE >> 30} GiB: not fetched")
    dest = Path(dest)
    if dest.is_symlink() or (dest.exists() and (not dest.is_dir() or any(dest.iterdir()))):
        raise StoreError(f"{dest}: already exists and is not an empty folder: not overwritten")
    if not dest.parent.is_dir():
        raise StoreError(f"{dest.parent}: no such folder")
    # Built beside, then moved in whole: a folder at ``dest`` is always a complete run.
    # (A plain mkdir, unlike mkdtemp's 0700, gives the folder the umask's mode.)
    building = dest.parent / f".{dest.name}.{uuid.uuid4().hex[:12]}.tmp"
    try:
        building.mkdir()
    except OSError as error:
        raise StoreError(f"{dest.parent}: cannot write ({error.strerror})") from None
    try:
        root = building.resolve()
        for stored in manifest.files:
            target = building / checked_relative_path(stored.path)
            # Checked by the record already; again here, where a mistake would write.
            if not target.resolve().is_relative_to(root) or target.is_symlink():
                raise StoreError(f"{manifest_digest}: {stored.path!r} leaves the run folder")
            try:
                store.fetch(stored.sha256, target, size=stored.size)
            except StoreError as error:
                raise StoreError(f"{stored.path}: {error}") from None
        try:
            if dest.exists():
                dest.rmdir()
            os.replace(building, dest)
        except OSError:
            # Another materialized it meanwhile (or something else took the name).
            raise StoreError(
                f"{dest}: appeared while the run was materialized: not overwritten"
            ) from None
    except OSError as error:
        raise StoreError(f"{dest}: cannot write the run ({error.strerror})") from None
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return dest
