"""Deterministic tarballs, and extraction of untrusted ones.

Writing: the same files give the same bytes. Entries are sorted, every mtime is 0, owner
and group are 0/"", modes are 0644 (0755 for directories), GNU format (long names
without pax headers, which would carry times), and gzip is written without a file name
or time. A file whose bytes equal an earlier one's is stored once, as a hard link to it.
Only the gzip stream depends on the machine's zlib: the same zlib gives the same bytes.

Reading: an archive from someone else is checked member by member before anything is
written: only directories, regular files and hard links to earlier files; no absolute
names, no ``..``, no name twice; a bound on members and bytes, and the bytes must fit
on the disk. Then those three kinds are written, and nothing else.
"""

from __future__ import annotations

import gzip
import os
import shutil
import tarfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from evalrepro import atomic
from evalrepro.digest import sha256_file
from evalrepro.errors import UserError

#: Bounds for an archive from elsewhere: a bundle of SWE-bench's 2,294 trials has
#: about 40,000 files; images make up most of the bytes.
MAX_MEMBERS = 1_000_000
MAX_BYTES = 256 << 30

_GZIP_LEVEL = 6
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Entry:
    """A file to archive: its name inside the archive, where its bytes are now."""

    name: str
    source: Path


def write_tarball(output: Path, entries: Iterable[Entry]) -> None:
    """``output`` (written atomically): a gzipped tar of ``entries`` and their folders."""
    files = sorted(entries, key=lambda entry: entry.name)
    names = [entry.name for entry in files]
    if len(set(names)) != len(names):
        raise ValueError("two entries with one name")
    folders = sorted({str(p) for name in names for p in PurePosixPath(name).parents} - {"."})
    first_by_digest: dict[str, str] = {}
    with atomic.writer(output) as raw:
        # filename="" and mtime=0: the gzip header names no file and no time.
        with gzip.GzipFile(
            filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=_GZIP_LEVEL
        ) as zipped:
            with tarfile.open(fileobj=zipped, mode="w", format=tarfile.GNU_FORMAT) as tar:
                for folder in folders:
                    tar.addfile(member_info(folder, tarfile.DIRTYPE, 0o755))
                # Files in name order after the folders: a hard link follows its file.
                for entry in files:
                    digest = sha256_file(entry.source)
                    size = entry.source.stat().st_size
                    earlier = first_by_digest.get(digest)
                    if earlier is not None:
                        link = member_info(entry.name, tarfile.LNKTYPE, 0o644)
                        link.linkname = earlier
                        tar.addfile(link)
                        continue
                    first_by_digest[digest] = entry.name
                    info = member_info(entry.name, tarfile.REGTYPE, 0o644)
                    info.size = size
                    with open(entry.source, "rb") as handle:
                        tar.addfile(info, handle)


def member_info(name: str, kind: bytes = tarfile.REGTYPE, mode: int = 0o644) -> tarfile.TarInfo:
    """A member's header with nothing of the machine in it: no time, no owner."""
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


# --- reading ---------------------------------------------------------------------------


def extract_untrusted(archive: Path, dest: Path, *, what: str = "archive") -> None:
    """Unpack ``archive`` into the empty folder ``dest``, or one UserError line."""
    try:
        with tarfile.open(archive, mode="r:*") as tar:
            members = _checked_members(tar, archive, dest, what)
            _extract(tar, members, dest)
    except (tarfile.TarError, EOFError, OSError, zlib.error) as error:
        if isinstance(error, OSError) and error.errno is not None:
            raise
        raise UserError(f"{archive}: not a readable {what} ({error})") from None


def _extract(tar: tarfile.TarFile, members: list[tarfile.TarInfo], dest: Path) -> None:
    # By hand rather than extractall(filter="data"), which Debian 12's Python 3.11.2
    # lacks: the members are checked already, and only three kinds are written.
    for member in members:
        target = dest / member.name.rstrip("/")
        if member.isdir():
            target.mkdir(mode=0o755, parents=True, exist_ok=True)
            continue
        target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        if member.islnk():
            os.link(dest / member.linkname, target)
            continue
        source = tar.extractfile(member)
        assert source is not None  # a regular member always has content
        # O_EXCL: a name cannot land on a file written before (names are unique).
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as handle:
            shutil.copyfileobj(source, handle, _CHUNK)


def _checked_members(
    tar: tarfile.TarFile, archive: Path, dest: Path, what: str
) -> list[tarfile.TarInfo]:
    members: list[tarfile.TarInfo] = []
    seen: set[str] = set()
    files: set[str] = set()
    total = 0
    for member in tar:
        if len(members) >= MAX_MEMBERS:
            raise UserError(f"{archive}: more than {MAX_MEMBERS} members; not a {what}")
        name = member.name.rstrip("/")
        where = f"{archive}: member {name!r}"
        path = PurePosixPath(name)
        if not name or path.is_absolute() or ".." in path.parts or "\\" in name or "\0" in name:
            raise UserError(f"{where}: a name outside the {what}")
        if name in seen:
            raise UserError(f"{where}: appears twice")
        seen.add(name)
        if member.isdir():
            pass
        elif member.isreg():
            total += member.size
            files.add(name)
        elif member.islnk():
            if member.linkname not in files:
                raise UserError(f"{where}: a hard link to {member.linkname!r}, not an earlier file")
            files.add(name)
        else:
            kind = "symbolic link" if member.issym() else "device, FIFO or other special file"
            raise UserError(f"{where}: a {kind}; a {what} holds only files and folders")
        if total > MAX_BYTES:
            raise UserError(f"{archive}: unpacks to more than {MAX_BYTES >> 30} GiB; not read")
        members.append(member)
    free = shutil.disk_usage(dest).free
    if total > free:
        raise UserError(f"{archive}: unpacks to {total >> 20} MiB, {free >> 20} MiB free in {dest}")
    return members


def check_tree(root: Path, *, what: str = "folder") -> None:
    """An unpacked tree from elsewhere: only folders and regular files, no links."""
    for folder, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            path = Path(folder) / name
            if path.is_symlink():
                raise UserError(f"{path}: a symbolic link; a {what} holds only files and folders")
            if name in filenames and not path.is_file():
                raise UserError(f"{path}: a special file; a {what} holds only files and folders")
