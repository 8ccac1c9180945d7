"""Build the demo repos (``evalrepro/demo/repos/``) as git repositories whose commit SHAs
are the same everywhere.

Each repo lives in ``repos/<name>/`` as one directory per commit, ``NN-label``, applied in
order: ``01-initial`` holds the whole first tree, each later directory holds only the
files that commit adds or replaces (whole files, no deletions). The commit's label is the
directory name without ``NN-`` (``initial``, ``power-operator``...), its message is the
label in words.

A SHA depends on the tree, the author, the committer, their dates and the message; all
are fixed here, and the commits are made by :func:`evalrepro.sources.commits.commit_directory` (as
the commits of source distributions are): no system or global config, no hooks, no
signing, no attribute or line-ending conversion, so nothing of the machine leaks in.

Test ids in ``instances.jsonl`` use the native parser family's format:

* pytest repos (``calc``, ``textkit``): the node id as ``pytest -rA`` prints it,
  relative to the repo root, e.g. ``tests/test_eval.py::test_power`` or
  ``tests/test_eval.py::test_arithmetic[1 + 2-3.0]`` (parameter ids keep their spaces).
* unittest repo (``ledger``): ``module.Class.test_method`` with the module's dotted
  path from the repo root, e.g. ``tests.test_ledger.LedgerTest.test_balance_of_all_entries``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

from evalrepro.demo import DEMO_DIR
from evalrepro.digest import sha256_json
from evalrepro.sources import commits
from evalrepro.sources.commits import Signature, commit_directory, init_repository

REPOS_DIR = DEMO_DIR / "repos"
POLYGLOT_DIR = REPOS_DIR / "polyglot"
AUTHOR_NAME = "evalrepro demo"
AUTHOR_EMAIL = "demo@evalrepro.invalid"
#: 2024-01-01T00:00:00Z; commit N is dated N-1 days later.
FIRST_COMMIT_EPOCH = 1_704_067_200
_DAY = 86_400


_COMMIT_DIR = re.compile(r"[0-9]{2}-[a-z0-9-]+")


def _is_repo(path: Path) -> bool:
    return path.is_dir() and any(_COMMIT_DIR.fullmatch(p.name) for p in path.iterdir())


def repo_names() -> list[str]:
    """The names of the Python demo's repos (``calc``, ``ledger``, ``textkit``)."""
    return sorted(path.name for path in REPOS_DIR.iterdir() if _is_repo(path))


def polyglot_names() -> list[str]:
    """The names of ``demo_polyglot``'s repos, one per language (``polyglot/roman``...)."""
    return sorted(f"polyglot/{path.name}" for path in POLYGLOT_DIR.iterdir() if _is_repo(path))


def commit_dirs(name: str) -> list[Path]:
    """The commit directories of repo ``name``, oldest first."""
    root = REPOS_DIR / name
    if name not in (*repo_names(), *polyglot_names()):
        known = ", ".join((*repo_names(), *polyglot_names()))
        raise ValueError(f"unknown demo repo {name!r}; known: {known}")
    return sorted(path for path in root.iterdir() if path.is_dir())


def commit_label(commit_dir: Path) -> str:
    """``03-variables`` -> ``variables``."""
    return commit_dir.name.split("-", 1)[1]


def _files(source: Path) -> Iterator[tuple[str, bytes]]:
    """A commit directory's files as committed: (path relative to it, bytes)."""
    for path in sorted(source.rglob("*")):
        if path.is_dir() or "__pycache__" in path.parts or path.suffix == ".pyc":
            continue
        # Line endings normalised: they are part of the commit's tree.
        yield path.relative_to(source).as_posix(), path.read_bytes().replace(b"\r\n", b"\n")


def _copy_tree(source: Path, dest: Path) -> None:
    for relative, data in _files(source):
        target = dest / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(0o644)  # the mode bits are part of the tree too


def source_digest(name: str) -> str:
    """sha256 over the canonical JSON of everything :func:`build_repo` makes repo ``name``
    from: each commit's files, the signature, and the code that commits (so that a cached
    repo is one this code would build)."""
    return sha256_json(
        {
            "author": [AUTHOR_NAME, AUTHOR_EMAIL, FIRST_COMMIT_EPOCH, _DAY],
            "committer": hashlib.sha256(Path(commits.__file__).read_bytes()).hexdigest(),
            "commits": [
                [d.name, [[path, hashlib.sha256(data).hexdigest()] for path, data in _files(d)]]
                for d in commit_dirs(name)
            ],
        }
    )


def build_repo(name: str, dest: Path) -> dict[str, str]:
    """Create demo repo ``name`` as a git repo in ``dest`` (absent or empty).

    Returns ``{commit label: sha}`` in commit order; the worktree is left at the last
    commit on branch ``main``.
    """
    dirs = commit_dirs(name)
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise ValueError(f"{dest}: not empty, cannot build demo repo {name!r} there")
    dest.mkdir(parents=True, exist_ok=True)
    git_dir = init_repository(dest, bare=False)
    shas: dict[str, str] = {}
    parent = None
    for number, commit_dir in enumerate(dirs):
        label = commit_label(commit_dir)
        _copy_tree(commit_dir, dest)
        signature = Signature(AUTHOR_NAME, AUTHOR_EMAIL, FIRST_COMMIT_EPOCH + number * _DAY)
        message = label.replace("-", " ").capitalize()
        parent = commit_directory(
            dest, git_dir, signature=signature, message=message, parent=parent
        )
        shas[label] = parent
    return shas
