"""Commits made from files on disk, the same on every machine.

:func:`commit_directory` commits a directory as it is on disk, by a :class:`Signature`
(author and committer alike) into a repository :func:`init_repository` made: the commit
of an sdist (:mod:`evalrepro.sources.sdist`) and the demo repos' histories.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from evalrepro.sources.git import PINNED_CONFIG, RepoError, git


@dataclass(frozen=True)
class Signature:
    """Who made a commit, and when: author and committer alike."""

    name: str
    email: str
    #: seconds since 1970-01-01T00:00:00Z; the zone is always +0000
    epoch: int

    def env(self) -> dict[str, str]:
        date = f"{self.epoch} +0000"
        return {
            "GIT_AUTHOR_NAME": self.name,
            "GIT_AUTHOR_EMAIL": self.email,
            "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_NAME": self.name,
            "GIT_COMMITTER_EMAIL": self.email,
            "GIT_COMMITTER_DATE": date,
        }


def init_repository(dest: Path, *, bare: bool, branch: str = "main") -> Path:
    """A new repository at ``dest`` (SHA-1, no template); its git dir."""
    # An empty --template leaves out sample hooks and any machine-specific template dir.
    kind = ["--bare"] if bare else []
    git("init", "--quiet", *kind, "--template=", "--object-format=sha1", "-b", branch, str(dest))
    return dest if bare else dest / ".git"


def commit_directory(
    tree: Path,
    git_dir: Path,
    *,
    signature: Signature,
    message: str,
    parent: str | None = None,
    branch: str = "main",
    index_file: Path | None = None,
) -> str:
    """Commit every file under ``tree`` (but ``tree/.git``) as it is on disk; its SHA.

    The commit is a function of the files alone: contents byte for byte (no line-ending
    conversion, no filters, no ``.gitignore`` or ``.gitattributes``), mode 100755 for a
    file its owner may execute and 100644 otherwise, symlinks as links; directories
    without files vanish, as in any git tree. It replaces the index (``index_file``,
    default the repo's own) and moves ``branch`` to the new commit.
    """
    blobs: list[tuple[str, Path]] = []
    links: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(tree):
        here = Path(dirpath)
        if here == tree:
            dirnames[:] = [name for name in dirnames if name != ".git"]
        for name in sorted([*dirnames, *filenames]):
            path = here / name
            rel = path.relative_to(tree).as_posix()
            if path.is_symlink():
                links.append((rel, path))
            elif name in filenames:
                if not path.is_file():
                    raise RepoError(f"{rel}: neither a file, a directory nor a symlink")
                if "\n" in str(path):
                    raise RepoError(f"{rel!r}: a file name with a newline")
                executable = path.stat().st_mode & stat.S_IXUSR
                blobs.append(("100755" if executable else "100644", path))
    ids = git(
        "hash-object",
        "-w",
        "--no-filters",
        "--stdin-paths",
        git_dir=git_dir,
        input="".join(f"{path}\n" for _, path in blobs),
    ).split()
    entries = [
        f"{mode} {oid}\t{path.relative_to(tree).as_posix()}"
        for (mode, path), oid in zip(blobs, ids, strict=True)
    ]
    for rel, path in links:
        oid = git("hash-object", "-w", "--stdin", git_dir=git_dir, input=os.readlink(path))
        entries.append(f"120000 {oid}\t{rel}")
    index = index_file or git_dir / "index"
    index.unlink(missing_ok=True)
    env = {"GIT_INDEX_FILE": str(index)}
    config = [arg for item in PINNED_CONFIG for arg in ("-c", item)]
    git(
        *config,
        "update-index",
        "-z",
        "--add",
        "--index-info",
        git_dir=git_dir,
        env=env,
        input="".join(f"{entry}\0" for entry in entries),
    )
    tree_id = git("write-tree", git_dir=git_dir, env=env)
    parents = ["-p", parent] if parent else []
    commit = git(
        *config,
        "commit-tree",
        tree_id,
        *parents,
        "-m",
        message,
        git_dir=git_dir,
        env=signature.env(),
    )
    git("update-ref", f"refs/heads/{branch}", commit, git_dir=git_dir)
    if (git_dir.parent / ".git") == git_dir and git_dir.parent == tree:
        # A work tree: let the index know its files, so the repo is clean at the commit.
        git(
            "--work-tree",
            str(tree),
            "update-index",
            "-q",
            "--refresh",
            git_dir=git_dir,
            env=env,
            cwd=tree,
        )
    return commit
