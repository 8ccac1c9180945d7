"""Artifact: a file an attempt produced, pinned by digest."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from evalrepro.digest import sha256_bytes


class Artifact(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Relative to the run directory, with forward slashes.
    path: str
    sha256: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    size: int = Field(ge=0)
    media_type: str

    @classmethod
    def of_file(cls, file: Path, root: Path, media_type: str) -> Artifact:
        data = file.read_bytes()
        return cls(
            path=file.relative_to(root).as_posix(),
            sha256=sha256_bytes(data),
            size=len(data),
            media_type=media_type,
        )

    def matches(self, root: Path) -> bool:
        """The file still exists under ``root`` with the recorded digest and size."""
        file = root / self.path
        if not file.is_file():
            return False
        data = file.read_bytes()
        return len(data) == self.size and sha256_bytes(data) == self.sha256
