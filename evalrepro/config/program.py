"""An agent's program as a folder (``CommandAgent.program``): hashed when the config is
read, copied into the agent's sandbox read-only, checked there against that digest.

The digest is sha256 over the canonical JSON of the folder's listing, sorted by relative
path: a folder is ``[path, "dir"]``, a file ``[path, "file", executable, size, sha256]``,
a symbolic link ``[path, "link", target]`` (its target must resolve inside the folder).
Only the executable bit of a mode counts: the copy in the sandbox is root's and has no
write bit, whatever the source's owner and modes, and still hashes the same. Bounded:
:data:`MAX_FILES` entries, :data:`MAX_BYTES` bytes of file content. Anything else (a
device, a socket, a link out of the folder, a file unreadable) is refused in one line.
"""

from __future__ import annotations

import hashlib
import io
import os
import posixpath
import stat
import tarfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from evalrepro.digest import sha256_json

#: Entries (files, folders, links) of a program folder, at most.
MAX_FILES = 10_000
#: Bytes of file content of a program folder, at most (it is copied through memory).
MAX_BYTES = 256 << 20
#: Where the program may not be put: the repository, the harness's own files, the
#: kernel's.
_RESERVED = ("/testbed", "/tmp/evalrepro", "/proc", "/sys", "/dev", "/etc", "/evalrepro")
#: The variable that names the program's folder in the agent's environment.
PROGRAM_ENV = "EVALREPRO_AGENT_PROGRAM"

Entry = list[str | int | bool]


class ProgramError(ValueError):
    """The program folder cannot be used (one line: what, and where)."""


class AgentProgram(BaseModel):
    """A folder of the host brought into the agent's sandbox, read-only, at ``at``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The folder on the machine that runs the trials (an absolute path, or relative to
    #: the directory evalrepro runs in). Where it is is not what it is: not identity.
    source: str = Field(min_length=1)
    #: Where the agent finds it in the sandbox (absolute; not in the repository).
    at: str = "/opt/agent"
    #: sha256 of its canonical listing; computed when the config is read (a locked
    #: target keeps the digest it was locked with, and the run checks the folder
    #: against it).
    digest: str = ""

    @field_validator("at")
    @classmethod
    def _at(cls, at: str) -> str:
        clean = posixpath.normpath(at)
        if not at.startswith("/") or clean == "/" or clean != at.rstrip("/"):
            raise ValueError(f"program.at must be a normalized absolute folder: {at!r}")
        if any(clean == r or clean.startswith(r + "/") for r in _RESERVED):
            raise ValueError(f"program.at may not be in {', '.join(_RESERVED)}: {at!r}")
        return clean

    @model_validator(mode="after")
    def _hashed(self) -> AgentProgram:
        if not self.digest:
            digest, _ = read_program(Path(self.source))
            object.__setattr__(self, "digest", digest)
        return self


def read_program(root: Path) -> tuple[str, bytes]:
    """The folder's digest, and a tar of exactly what was hashed (owner root, no write
    bits): what is copied in is what was read, whatever changes in the folder after."""
    root = Path(os.path.abspath(root))
    if not root.is_dir() or root.is_symlink():
        raise ProgramError(f"agent program {root}: not a folder")
    entries: list[Entry] = []
    buffer = io.BytesIO()
    total = 0
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for folder, dirs, files in os.walk(root):
            dirs.sort()
            for name in sorted([*dirs, *files]):
                path = Path(folder) / name
                rel = path.relative_to(root).as_posix()
                if len(entries) >= MAX_FILES:
                    raise ProgramError(f"agent program {root}: more than {MAX_FILES} entries")
                info = os.lstat(path)
                member = tarfile.TarInfo(rel)
                member.uid = member.gid = 0
                member.uname = member.gname = "root"
                if stat.S_ISLNK(info.st_mode):
                    target = os.readlink(path)
                    inside = os.path.normpath(os.path.join(os.path.dirname(path), target))
                    if os.path.isabs(target) or not inside.startswith(str(root) + os.sep):
                        raise ProgramError(
                            f"agent program {root}: {rel} is a link out of the folder (-> {target})"
                        )
                    entries.append([rel, "link", target])
                    member.type, member.linkname, member.mode = tarfile.SYMTYPE, target, 0o777
                    tar.addfile(member)
                elif stat.S_ISDIR(info.st_mode):
                    entries.append([rel, "dir"])
                    member.type, member.mode = tarfile.DIRTYPE, 0o555
                    tar.addfile(member)
                elif stat.S_ISREG(info.st_mode):
                    data = _read(path, root, rel)
                    total += len(data)
                    if total > MAX_BYTES:
                        raise ProgramError(f"agent program {root}: over {MAX_BYTES} bytes")
                    executable = bool(info.st_mode & 0o111)
                    entries.append(
                        [rel, "file", executable, len(data), hashlib.sha256(data).hexdigest()]
                    )
                    member.size, member.mode = len(data), 0o555 if executable else 0o444
                    tar.addfile(member, io.BytesIO(data))
                else:
                    raise ProgramError(f"agent program {root}: {rel} is not a file or folder")
            # A link to a folder is listed above as a link, never walked into.
            dirs[:] = [d for d in dirs if not (Path(folder) / d).is_symlink()]
    entries.sort(key=lambda entry: str(entry[0]))
    return sha256_json(entries), buffer.getvalue()


def _read(path: Path, root: Path, rel: str) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as error:
        raise ProgramError(f"agent program {root}: cannot read {rel}: {error.strerror}") from None
    with os.fdopen(fd, "rb") as file:
        data = file.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ProgramError(f"agent program {root}: over {MAX_BYTES} bytes")
    return data


def tar_digest(data: bytes) -> tuple[str, list[str]]:
    """The digest of a tar of a program folder as ``podman cp`` gives it (the folder
    itself its first member), and what in it is not root's read-only copy."""
    entries: list[Entry] = []
    problems: list[str] = []
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        members = tar.getmembers()
        top = members[0].name.rstrip("/") if members else ""
        for member in members:
            rel = member.name.rstrip("/")
            # The folder itself too: a writable one would take new files.
            if member.uid != 0 or (member.mode & 0o222 and not member.issym()):
                problems.append(f"{rel} (owner {member.uid}, mode {member.mode:o})")
            if rel == top:
                continue
            rel = rel[len(top) + 1 :] if top and rel.startswith(top + "/") else rel
            if member.issym():
                entries.append([rel, "link", member.linkname])
            elif member.isdir():
                entries.append([rel, "dir"])
            elif member.isfile():
                file = tar.extractfile(member)
                content = file.read() if file is not None else b""
                entries.append(
                    [
                        rel,
                        "file",
                        bool(member.mode & 0o111),
                        len(content),
                        hashlib.sha256(content).hexdigest(),
                    ]
                )
            else:
                problems.append(f"{rel} (not a file or folder)")
    entries.sort(key=lambda entry: str(entry[0]))
    return sha256_json(entries), problems
