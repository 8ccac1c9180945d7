"""``archive`` sources: a tar (plain, gz, bz2, xz) or zip file pinned by sha256 over its bytes.

If it holds a git repository (a ``.git`` directory, or a bare repo, at its top or in a
top-level directory), that repository is the source. Otherwise it is a plain source tree,
an sdist: its files become one commit made the same on every machine
(:mod:`evalrepro.sources.sdist`). Either is kept in the cache, keyed by the archive's bytes.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from functools import partial
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, FilePath

from evalrepro.errors import UserError
from evalrepro.sources.checkout import GitDir, make_once
from evalrepro.sources.git import RepoError, git
from evalrepro.sources.sdist import commit_sdist
from evalrepro.sources.unpack import extract, file_sha256, git_dir_in


class ArchiveRepo(BaseModel):
    """A tar or zip file of a git repository or of a source tree (an sdist), pinned by
    sha256 over its bytes."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["archive"] = "archive"
    #: A tar (plain, gz, bz2, xz) or zip file: of a git repository, or of a source tree
    #: (an sdist: its files become one commit, see
    #: `python -m evalrepro.sources.sdist sdist-commit`).
    path: FilePath
    #: sha256 over the archive's bytes (`sha256:` prefix optional); a mismatch is refused.
    sha256: str = Field(pattern=r"^(sha256:)?[0-9a-f]{64}$")


def open_archive(source: ArchiveRepo, cache_dir: Path) -> GitDir:
    path = Path(source.path)
    expected = source.sha256.removeprefix("sha256:")
    actual = file_sha256(path)
    if actual != expected:
        raise UserError(f"archive {path} has sha256 {actual}, the dataset pins {expected}")
    parent = _mkdir(cache_dir / "repos")
    # Keyed by the archive's bytes: the one holding a git repo is kept unpacked (its
    # .git is the source), a source tree becomes a bare repo of its one commit.
    extracted, sdist = parent / f"archive-{expected}", parent / f"sdist-{expected}.git"
    found = _cached_archive(extracted, sdist, path)
    if found is None:
        _unpack(path, parent, extracted, sdist)
        found = _cached_archive(extracted, sdist, path)
    if found is None:
        raise RepoError(f"archive {path}: nothing usable in the cache at {parent}")
    return GitDir(f"archive {path}", found)


def _cached_archive(extracted: Path, sdist: Path, archive: Path) -> Path | None:
    if sdist.is_dir():
        return sdist
    if extracted.is_dir():
        found = git_dir_in(extracted, archive)
        if found is not None:
            return found
        shutil.rmtree(extracted)  # a source tree an older evalrepro left unpacked: redo it
    return None


def _unpack(archive: Path, parent: Path, extracted: Path, sdist: Path) -> None:
    with tempfile.TemporaryDirectory(dir=parent, prefix=".archive-") as scratch:
        tree = Path(scratch) / "tree"
        extract(archive, tree)
        found = git_dir_in(tree, archive)
        if found is not None:
            _neutralize(found)
            make_once(extracted, partial(os.replace, tree))
        else:
            make_once(sdist, partial(commit_sdist, tree, archive=archive))


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _neutralize(git_dir: Path) -> None:
    """An archive's repository must not run or reach anything: fixed config, no
    alternates (objects from elsewhere on this machine), no hooks."""
    if (git_dir / "commondir").exists():
        raise UserError(f"{git_dir}: a linked worktree's git dir; archive the repository")
    config = git_dir / "config"
    keep = ["[core]", "\trepositoryformatversion = 0"]
    if config.is_file():
        try:
            object_format = git("config", "--file", str(config), "extensions.objectformat")
        except RepoError:
            object_format = ""
        if object_format:
            keep = [
                "[core]",
                "\trepositoryformatversion = 1",
                "[extensions]",
                f"\tobjectformat = {object_format}",
            ]
    config.write_text("\n".join(keep) + "\n")
    leftovers = (
        "objects/info/alternates",
        "objects/info/http-alternates",
        "hooks",
        "info/attributes",
        "info/grafts",
    )
    for leftover in leftovers:
        target = git_dir / leftover
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)
