"""A run folder as stored in an object store: the manifest ``evalrepro.store.runs``
uploads after every file of the run, itself an object of the store (stored by its sha256,
like the files it lists)."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalrepro.records.base import Record

_SHA256 = r"^sha256:[0-9a-f]{64}$"


def checked_relative_path(path: str) -> str:
    """``path`` if it is a plain relative POSIX path inside a folder (no ``..``, nothing
    absolute, no empty or ``.`` part, no backslash or control character); else ValueError."""
    if not path or len(path) > 4096:
        raise ValueError("a path must have 1 to 4096 characters")
    if re.search(r"[\x00-\x1f\x7f\\]", path):
        raise ValueError(f"path {path[:200]!r} has a backslash or a control character")
    if path.startswith("/"):
        raise ValueError(f"path {path[:200]!r} is absolute")
    if any(part in ("", ".", "..") for part in path.split("/")):
        raise ValueError(f"path {path[:200]!r} has an empty, '.' or '..' part")
    return path


class StoredFile(BaseModel):
    """One file of the run: its path in the run folder, and its object."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    sha256: str = Field(pattern=_SHA256)
    size: int = Field(ge=0)

    @field_validator("path")
    @classmethod
    def _relative(cls, value: str) -> str:
        return checked_relative_path(value)


class StoredRun(Record):
    """Every file of a run folder (by path order), each stored by its sha256."""

    record: Literal["StoredRun"] = "StoredRun"
    files: list[StoredFile]

    @field_validator("files")
    @classmethod
    def _one_tree(cls, files: list[StoredFile]) -> list[StoredFile]:
        paths = [f.path for f in files]
        if len(set(paths)) != len(paths):
            raise ValueError("a path is listed twice")
        folders = {str(p) for f in files for p in PurePosixPath(f.path).parents}
        clash = folders.intersection(paths)
        if clash:
            raise ValueError(f"{sorted(clash)[0][:200]!r} is both a file and a folder")
        return files
