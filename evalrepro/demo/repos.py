"""Build the demo repos as git repositories whose commit SHAs are the same everywhere.

Each repo lives in ``repos/<name>/`` as one directory per commit, ``NN-label``, applied in
order: ``01-initial`` holds the whole first tree, each later directory holds only the
files that commit adds or replaces (whole files, no deletions). The commit's label is the
directory name without ``NN-`` (``initial``, ``power-operator``...), its message is the
label in words.

A SHA depends on the tree, the author, the committer, their dates and the message; all
are fixed here, and git runs with no system or global config, no hooks, no signing and no
attribute or line-ending conversion, so nothing of the machine leaks into the commits.

Test ids in ``instances.jsonl`` use the native parser family's format:

* pytest repos (``calc``, ``textkit``): the node id as ``pytest -rA`` prints it,
  relative to the repo root, e.g. ``tests/test_eval.py::test_power`` or
  ``tests/test_eval.py::test_arithmetic[1 + 2-3.0]`` (parameter ids keep their spaces).
* unittest repo (``ledger``): ``module.Class.test_method`` with the module's dotted
  path from the repo root, e.g. ``tests.test_ledger.LedgerTest.test_balance_of_all_entries``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPOS_DIR = Path(__file__).parent / "repos"
AUTHOR_NAME = "evalrepro demo"
AUTHOR_EMAIL = "demo@evalrepro.invalid"
#: 2024-01-01T00:00:00Z; commit N is dated N-1 days later.
FIRST_COMMIT_EPOCH = 1_704_067_200
_DAY = 86_400
#: Per-command settings that override anything a repo-local config could set.
_GIT_CONFIG = (
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.fileMode=true",
    f"core.attributesFile={os.devnull}",
    f"core.excludesFile={os.devnull}",
    f"core.hooksPath={os.devnull}",
    "commit.gpgSign=false",
    "i18n.commitEncoding=UTF-8",
)


def repo_names() -> list[str]:
    """The names of the demo repos (``calc``, ``ledger``, ``textkit``)."""
    return sorted(path.name for path in REPOS_DIR.iterdir() if path.is_dir())


def commit_dirs(name: str) -> list[Path]:
    """The commit directories of repo ``name``, oldest first."""
    root = REPOS_DIR / name
    if not root.is_dir():
        raise ValueError(f"unknown demo repo {name!r}; known: {', '.join(repo_names())}")
    return sorted(path for path in root.iterdir() if path.is_dir())


def commit_label(commit_dir: Path) -> str:
    """``03-variables`` -> ``variables``."""
    return commit_dir.name.split("-", 1)[1]


def _git_env(epoch: int) -> dict[str, str]:
    # Drop GIT_* from the caller (GIT_DIR, GIT_DEFAULT_HASH...) and ignore the system
    # and global config: they would change where and how the commits are written.
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    date = f"{epoch} +0000"
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_AUTHOR_NAME=AUTHOR_NAME,
        GIT_AUTHOR_EMAIL=AUTHOR_EMAIL,
        GIT_AUTHOR_DATE=date,
        GIT_COMMITTER_NAME=AUTHOR_NAME,
        GIT_COMMITTER_EMAIL=AUTHOR_EMAIL,
        GIT_COMMITTER_DATE=date,
        LC_ALL="C",
    )
    return env


def _git(dest: Path, env: dict[str, str], *args: str) -> str:
    config = [arg for item in _GIT_CONFIG for arg in ("-c", item)]
    done = subprocess.run(
        ["git", *config, *args], cwd=dest, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def _copy_tree(source: Path, dest: Path) -> None:
    for path in sorted(source.rglob("*")):
        if path.is_dir() or "__pycache__" in path.parts or path.suffix == ".pyc":
            continue
        target = dest / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        # Normalise line endings and the mode bits: both are part of the commit's tree.
        target.write_bytes(path.read_bytes().replace(b"\r\n", b"\n"))
        target.chmod(0o644)


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
    env = _git_env(FIRST_COMMIT_EPOCH)
    # An empty --template leaves out sample hooks and any machine-specific template dir.
    _git(dest, env, "init", "--quiet", "--template=", "-b", "main")
    shas: dict[str, str] = {}
    for number, commit_dir in enumerate(dirs):
        label = commit_label(commit_dir)
        _copy_tree(commit_dir, dest)
        env = _git_env(FIRST_COMMIT_EPOCH + number * _DAY)
        _git(dest, env, "add", "--all", "--force", ".")
        message = label.replace("-", " ").capitalize()
        _git(dest, env, "commit", "--quiet", "--no-verify", "--no-gpg-sign", "-m", message)
        shas[label] = _git(dest, env, "rev-parse", "HEAD")
    return shas
