"""What the image layers are built from: every source gives a :class:`LocalCheckout`.

Its two exports feed the image layers deterministically: the history as a bare repo and
the tree of one commit. Its ``source_digest`` is a digest of exactly the refs the history
export holds, so sources with the same history share one history layer, whatever their
kind or repo name. A :class:`GitDir` is a source that is a whole repository on this
machine (a ``local`` one, an archive's, a demo repo); :func:`make_once` makes what a
source keeps in the cache.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

from evalrepro.digest import sha256_json
from evalrepro.sources.git import RepoError, git, present, tips, unreachable

#: Where the history export keeps a base commit no branch or tag reaches.
PIN_PREFIX = "refs/evalrepro/"


@dataclass(frozen=True)
class LocalCheckout:
    """A git repository on this machine, and the refs its history export holds."""

    #: What the source is, for messages (``archive x.tar.gz``, ``remote https://...``).
    name: str
    git_dir: Path
    #: (ref, object id), sorted: branches and tags, and ``refs/evalrepro/<commit>`` for
    #: each base commit they do not reach (all of a remote source's are such).
    refs: tuple[tuple[str, str], ...]

    @property
    def source_digest(self) -> str:
        """sha256 over the canonical JSON of the exported refs: the history's identity."""
        return sha256_json({"refs": [f"{oid} {ref}" for ref, oid in self.refs]})

    def has_commit(self, commit: str) -> bool:
        return bool(present(self.git_dir, [commit]))

    def export_history(self, dest: Path) -> None:
        """A bare repo at ``dest`` holding :attr:`refs`, packed deterministically."""
        git("init", "--quiet", "--bare", "--template=", str(dest))
        if self.refs:
            # By id, not by name: what is exported is what the digest says, even if a
            # branch of a local repo moves meanwhile. (Protocol v2 serves any object.)
            git(
                "-c",
                "protocol.version=2",
                "fetch",
                "--quiet",
                "--no-tags",
                "--no-write-fetch-head",
                "--no-recurse-submodules",
                "--stdin",
                str(self.git_dir),
                git_dir=dest,
                input="".join(f"+{oid}:{ref}\n" for ref, oid in self.refs),
            )
        # One thread and no delta-base reordering keep the pack byte-identical across runs.
        git("-c", "pack.threads=1", "repack", "-a", "-d", "-q", "-f", git_dir=dest)
        for volatile in ("FETCH_HEAD", "logs", "info", "description"):
            target = dest / volatile
            if target.is_dir():
                shutil.rmtree(target)
            else:
                target.unlink(missing_ok=True)

    def read_file(self, commit: str, path: str) -> bytes | None:
        """The bytes of ``path`` in ``commit``'s tree; None: no such file there."""
        try:
            kind = git("cat-file", "-t", f"{commit}:{path}", git_dir=self.git_dir).strip()
        except RepoError:
            return None
        if kind != "blob":
            return None
        # git() gives text without its last newline: the same text every time.
        text = git("cat-file", "blob", f"{commit}:{path}", git_dir=self.git_dir)
        return text.encode("utf-8", "surrogateescape")

    def export_tree(self, commit: str, dest: Path) -> None:
        """The files of ``commit`` at ``dest`` (no .git), independent of export-ignore."""
        dest.mkdir(parents=True, exist_ok=True)
        # The machine's line endings and symlink support must not shape the files.
        config = ["-c", "core.autocrlf=false", "-c", "core.eol=lf", "-c", "core.symlinks=true"]
        with tempfile.TemporaryDirectory() as scratch:
            env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
            git(*config, "read-tree", commit, git_dir=self.git_dir, env=env)
            git(
                *config,
                "--work-tree",
                str(dest),
                "checkout-index",
                "--all",
                "--force",
                git_dir=self.git_dir,
                env=env,
            )


class GitDir:
    """A source that is a whole repository: its branches and tags are its history."""

    def __init__(self, name: str, git_dir: Path) -> None:
        self.name = name
        self.git_dir = git_dir

    def find(self, commits: Collection[str]) -> tuple[dict[str, str], str | None]:
        """Which commits it has (given -> full id), and why the rest are unknown (None:
        they are not there)."""
        return present(self.git_dir, commits), None

    def checkout(self, commits: Collection[str]) -> LocalCheckout:
        """The checkout that serves ``commits`` (full ids it has)."""
        pins = [(PIN_PREFIX + c, c) for c in unreachable(self.git_dir, commits)]
        return LocalCheckout(self.name, self.git_dir, tuple(sorted([*tips(self.git_dir), *pins])))


def make_once(dest: Path, make: Callable[[Path], object]) -> None:
    """Create ``dest`` by ``make(staging)`` then one rename: whole or absent, never half."""
    if dest.exists():
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}-"))
    try:
        make(staging / "new")
        try:
            os.replace(staging / "new", dest)
        except OSError:
            if not dest.exists():  # else another process made it meanwhile
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
