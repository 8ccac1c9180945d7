"""Deterministic tarballs, and extraction of untrusted ones.

Writing: the same files give the same bytes. Entries are sorted, every mtime is 0, owner
and group are 0/"", modes are 0644 (0755 for directories), GNU format (long names
without pax headers, which would carry times), and gzip is written without a file name
or time. A file whose bytes equal an earlier one's is stored once, as a hard link to it.
Only the gzip stream depends on the machine's zlib: the same zlib gives the same bytes.

Reading: an archive from someone else is checked before anything is written, each member
and the members together as the tree they unpack to: only directories, regular files and
hard links to earlier files; every name normalised (``b/./x`` is ``b/x``), none absolute,
none with ``..``, none twice, all inside one root folder; nothing inside a file and no
file where a folder is; a bound on members and bytes, and the bytes must fit on the
disk. Then those three kinds are written at their normalised paths, and nothing else.
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

#: The longest name (in bytes) of one path component, and of a whole member path, that
#: is unpacked: Linux's NAME_MAX, and a margin under PATH_MAX for the temporary folder.
_MAX_COMPONENT = 255
_MAX_PATH = 3072


@dataclass(frozen=True)
class _Member:
    """A checked member: its normalised path inside the archive, what it is, and for a
    hard link the normalised path of the earlier file it names."""

    info: tarfile.TarInfo
    path: PurePosixPath
    link: PurePosixPath | None = None


def extract_untrusted(archive: Path, dest: Path, *, what: str = "archive") -> None:
    """Unpack ``archive`` into the empty folder ``dest``, or one UserError line.

    Every member is checked, and the members together as a tree (``_checked_members``),
    before the first byte is written; then only folders, regular files and hard links to
    earlier files of the archive are made, each under ``dest`` at its normalised path.
    """
    try:
        with tarfile.open(archive, mode="r:*") as tar:
            members = _checked_members(tar, archive, dest, what)
            _extract(tar, members, dest)
    except (tarfile.TarError, EOFError, OSError, zlib.error) as error:
        if isinstance(error, OSError) and error.errno is not None:
            raise
        raise UserError(f"{archive}: not a readable {what} ({error})") from None


def _extract(tar: tarfile.TarFile, members: list[_Member], dest: Path) -> None:
    # By hand rather than extractall(filter="data"), which Debian 12's Python 3.11.2
    # lacks: the members are checked already (a tree of unique paths, a folder wherever
    # a member lies inside one), and only three kinds are written.
    for member in members:
        target = dest.joinpath(*member.path.parts)
        if member.info.isdir():
            target.mkdir(mode=0o755, parents=True, exist_ok=True)
            continue
        target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        if member.link is not None:
            os.link(dest.joinpath(*member.link.parts), target, follow_symlinks=False)
            continue
        source = tar.extractfile(member.info)
        assert source is not None  # a regular member always has content
        # O_EXCL: a name cannot land on a file written before (paths are unique).
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as handle:
            shutil.copyfileobj(source, handle, _CHUNK)


def normalised(name: str, where: str, what: str) -> PurePosixPath:
    """A member's name (or a hard link's target) as the path it unpacks to: empty and
    ``.`` components dropped; refused when it is absolute, climbs with ``..``, holds a
    NUL or a backslash, names nothing, or is too long to unpack."""
    if "\0" in name or "\\" in name:
        raise UserError(f"{where}: a name with a NUL or a backslash; not a {what}")
    if name.startswith("/"):
        raise UserError(f"{where}: an absolute name, outside the {what}")
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise UserError(f"{where}: a name with '..', outside the {what}")
    if not parts:
        raise UserError(f"{where}: names the top of the archive, not a member of the {what}")
    encoded = [os.fsencode(part) for part in parts]
    if max(map(len, encoded)) > _MAX_COMPONENT or sum(map(len, encoded)) > _MAX_PATH:
        raise UserError(f"{where}: a name too long to unpack; not a {what}")
    return PurePosixPath(*parts)


def _checked_members(tar: tarfile.TarFile, archive: Path, dest: Path, what: str) -> list[_Member]:
    """Every member, checked alone and as part of the tree they make together, or one
    UserError line naming the first member that cannot be part of a ``what``.

    Alone: a folder, a regular file or a hard link (no symbolic link, device, FIFO or
    other kind), with a name that unpacks inside the folder (``normalised``). Together:
    one root folder holds every member (the bag's); no two members normalise to one
    path; no member lies inside a path that is a file, and no file is where a folder is
    (named, or implied by a member inside it); a hard link names an earlier regular file
    of the archive; at most ``MAX_MEMBERS`` members and ``MAX_BYTES`` bytes, which must
    fit on the disk of ``dest``.
    """
    members: list[_Member] = []
    #: Every path the tree will hold (members and the folders they imply): is it a file?
    is_file: dict[PurePosixPath, bool] = {}
    #: Paths that members name (a folder may be implied first and named after).
    named: dict[PurePosixPath, str] = {}
    root: str | None = None
    total = 0
    for info in tar:
        if len(members) >= MAX_MEMBERS:
            raise UserError(f"{archive}: more than {MAX_MEMBERS} members; not a {what}")
        where = f"{archive}: member {info.name!r}"
        path = normalised(info.name, where, what)
        if info.isdir():
            kind = "folder"
        elif info.isreg():
            kind = "file"
        elif info.islnk():
            kind = "hard link"
        else:
            kind = "symbolic link" if info.issym() else "device, FIFO or other special file"
            raise UserError(f"{where}: a {kind}; a {what} holds only files and folders")
        root = path.parts[0] if root is None else root
        if path.parts[0] != root:
            raise UserError(f"{where}: outside {root!r}, the folder that holds the {what}")
        if len(path.parts) == 1 and kind != "folder":
            raise UserError(f"{where}: a {kind} at the top; a {what} is one folder")
        if path in named:
            raise UserError(f"{where}: appears twice (as {named[path]!r})")
        for folder in reversed(path.parents[:-1]):
            if is_file.get(folder, False):
                raise UserError(f"{where}: inside {str(folder)!r}, a file of the archive")
            is_file[folder] = False
        if kind != "folder" and path in is_file:
            raise UserError(f"{where}: a {kind} where the archive has a folder")
        link = None
        if kind == "hard link":
            link = normalised(info.linkname, f"{where}: a hard link to {info.linkname!r}", what)
            if not is_file.get(link, False):
                raise UserError(f"{where}: a hard link to {info.linkname!r}, not an earlier file")
        elif kind == "file":
            if info.size < 0:
                raise UserError(f"{where}: a negative size; not a {what}")
            total += info.size
            if total > MAX_BYTES:
                raise UserError(f"{archive}: unpacks to more than {MAX_BYTES >> 30} GiB; not read")
        named[path] = info.name
        is_file[path] = kind != "folder"
        members.append(_Member(info=info, path=path, link=link))
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
