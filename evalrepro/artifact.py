"""Artifact: a file an attempt produced, pinned by digest."""

from __future__ import annotations

import hashlib
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
    def of_file(cls, file: Path, root: Path, media_type: str) -> Artifact:
        digest, size = _file_digest(file)
        return cls(
            path=file.relative_to(root).as_posix(),
            sha256=digest,
            size=size,
            media_type=media_type,
        )

    def matches(self, root: Path) -> bool:
        """The file still exists under ``root`` with the recorded digest and size."""
        file = root / self.path
        if not file.is_file():
            return False
        return _file_digest(file) == (self.sha256, self.size)


def _file_digest(file: Path) -> tuple[str, int]:
    """sha256 over the file's bytes, read in chunks (logs can be tens of MB)."""
    with file.open("rb") as handle:
        digest = hashlib.file_digest(handle, "sha256")
        size = handle.tell()
    return f"sha256:{digest.hexdigest()}", size
