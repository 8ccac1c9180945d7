"""Artifact: a file an attempt produced, pinned by digest."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


class Artifact(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Relative to the run directory, with forward slashes.
    path: str
    sha256: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    size: int = Field(ge=0)
    media_type: str

    @classmethod
    def of_bytes(cls, path: str, data: bytes, media_type: str) -> Artifact:
        """The artifact of ``data``, to be written at ``path`` (relative to the run)."""
        return cls(
            path=path,
            sha256=f"sha256:{hashlib.sha256(data).hexdigest()}",
            size=len(data),
            media_type=media_type,
        )

    @classmethod
    def of_file(cls, file: Path, root: Path, media_type: str) -> Artifact:
        digest, size = _file_digest(file)
        return cls(
            path=file.relative_to(root).as_posix(),
            sha256=digest,
            size=size,
            media_type=media_type,
        )

    def matches(self, root: Path) -> bool:
        """The file still exists under ``root`` with the recorded digest and size: a
        regular file, reached without a symbolic link (a run directory from elsewhere,
        such as an unpacked bundle, must not make us hash a file outside it)."""
        parts = Path(self.path).parts
        if not parts or Path(self.path).is_absolute() or ".." in parts:
            return False
        node = root
        for part in parts:
            node = node / part
            if node.is_symlink():
                return False
        if not node.is_file():
            return False
        try:
            fd = os.open(node, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return False
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return False
            if os.fstat(handle.fileno()).st_size != self.size:
                return False  # cheaper than hashing a file of the wrong size
            digest = hashlib.file_digest(handle, "sha256")
        return f"sha256:{digest.hexdigest()}" == self.sha256


def _file_digest(file: Path) -> tuple[str, int]:
    """sha256 over the file's bytes, read in chunks (logs can be tens of MB)."""
    with file.open("rb") as handle:
        digest = hashlib.file_digest(handle, "sha256")
        size = handle.tell()
    return f"sha256:{digest.hexdigest()}", size
