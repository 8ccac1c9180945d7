"""``local`` sources: a git repository on this machine, used in place.

The repository itself (its work tree's top, or a bare / ``.git`` directory), or a file://
URL of it; its path is looked up but not above itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from evalrepro.errors import UserError
from evalrepro.sources.checkout import GitDir
from evalrepro.sources.git import RepoError, git


class LocalRepo(BaseModel):
    """A git repository on this machine: a path or a file:// URL, used in place."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["local"] = "local"
    #: The repository itself (its work tree's top, or a bare / .git directory), or a
    #: file:// URL of it; used in place, never looked up above this path.
    path: str


def open_local(source: LocalRepo) -> GitDir:
    path = Path(source.path.removeprefix("file://")).expanduser().absolute()
    if not path.is_dir():
        raise UserError(f"local source {source.path} is not a directory")
    try:
        # Looked up at the path itself, not above it: a folder inside some other work
        # tree is not that work tree's repository.
        found = git(
            "rev-parse",
            "--absolute-git-dir",
            cwd=path,
            env={"GIT_CEILING_DIRECTORIES": str(path.parent)},
        )
    except RepoError:
        raise UserError(f"local source {source.path} is not a git repository") from None
    return GitDir(f"local {source.path}", Path(found))
