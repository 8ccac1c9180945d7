"""Archive files: the sha256 that pins one, unpacking it safely, the git repository it holds."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tarfile
import zipfile
from pathlib import Path, PurePosixPath
from typing import IO

from evalrepro.errors import UserError


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def extract(archive: Path, dest: Path) -> None:
    """Unpack a tar or zip into ``dest`` refusing what would land outside it (absolute
    names, ``..``, links out, writes through links) and anything but files, directories
    and links. Modes are 0755 / 0644 by the owner's execute bit, whatever the umask."""
    dest.mkdir(parents=True)
    with archive.open("rb") as handle:
        zipped = handle.read(4) in (b"PK\x03\x04", b"PK\x05\x06")
    unpack = _Unpacker(archive, dest)
    try:
        if zipped:
            with zipfile.ZipFile(archive) as bundle:
                for info in bundle.infolist():
                    mode = info.external_attr >> 16 if info.create_system == 3 else 0
                    if info.is_dir():
                        unpack.directory(info.filename)
                    elif stat.S_ISLNK(mode):
                        unpack.symlink(info.filename, bundle.read(info).decode())
                    else:
                        with bundle.open(info) as data:
                            unpack.file(info.filename, data, bool(mode & stat.S_IXUSR))
            return
        with tarfile.open(archive) as bundle:
            for member in bundle:
                if member.isdir():
                    unpack.directory(member.name)
                elif member.isreg():
                    data = bundle.extractfile(member)
                    assert data is not None
                    unpack.file(member.name, data, bool(member.mode & stat.S_IXUSR))
                elif member.issym():
                    unpack.symlink(member.name, member.linkname)
                elif member.islnk():
                    unpack.hardlink(member.name, member.linkname)
                else:
                    raise UserError(
                        f"archive {archive}: member {member.name!r} is a device or fifo"
                    )
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, RuntimeError) as error:
        raise UserError(f"archive {archive}: cannot be unpacked ({error})") from None


class _Unpacker:
    def __init__(self, archive: Path, root: Path) -> None:
        self.archive = archive
        self.root = root

    def _target(self, name: str) -> Path:
        parts = [part for part in PurePosixPath(name).parts if part not in ("", ".")]
        if not parts or name.startswith("/") or ".." in parts:
            raise UserError(f"archive {self.archive}: member {name!r} would land outside it")
        here = self.root
        for part in parts[:-1]:  # nothing may be written through a link
            here = here / part
            if here.is_symlink() or (here.exists() and not here.is_dir()):
                raise UserError(f"archive {self.archive}: member {name!r} goes through a link")
        return self.root.joinpath(*parts)

    def _replace(self, target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.is_file():
            target.unlink()  # a later member of the same name wins, as tar does
        elif target.exists():
            raise UserError(f"archive {self.archive}: {target.name!r} is a file and a folder")

    def directory(self, name: str) -> None:
        target = self._target(name)
        if target.is_symlink():
            raise UserError(f"archive {self.archive}: member {name!r} goes through a link")
        target.mkdir(parents=True, exist_ok=True)
        target.chmod(0o755)

    def file(self, name: str, data: IO[bytes], executable: bool) -> None:
        target = self._target(name)
        self._replace(target)
        with target.open("wb") as out:
            shutil.copyfileobj(data, out)
        target.chmod(0o755 if executable else 0o644)

    def symlink(self, name: str, link: str) -> None:
        target = self._target(name)
        inside = os.path.normpath(os.path.join(os.path.dirname(name), link))
        if os.path.isabs(link) or inside == ".." or inside.startswith("../"):
            raise UserError(f"archive {self.archive}: link {name!r} -> {link!r} leaves it")
        self._replace(target)
        target.symlink_to(link)

    def hardlink(self, name: str, linked: str) -> None:
        source = self._target(linked)
        if source.is_symlink() or not source.is_file():
            raise UserError(f"archive {self.archive}: {name!r} links to no earlier file")
        target = self._target(name)
        self._replace(target)
        shutil.copyfile(source, target)
        target.chmod(source.stat().st_mode & 0o777)


def git_dir_in(root: Path, archive: Path) -> Path | None:
    """The git dir an extracted archive holds: at its top or in a top-level directory."""
    candidates = [root, *sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink())]
    for candidate in candidates:
        dot_git = candidate / ".git"
        if dot_git.is_symlink() or dot_git.is_file():
            # A gitfile or a link points at a repository elsewhere on this machine.
            raise UserError(
                f"archive {archive}: {dot_git.relative_to(root)} points elsewhere "
                "(a worktree or submodule): archive the repository itself"
            )
        for git_dir in (dot_git, candidate):
            if all((git_dir / part).exists() for part in ("HEAD", "objects", "refs")):
                return git_dir
    return None
