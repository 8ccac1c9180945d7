"""Repository sources: where a dataset's git histories come from, made local.

GitHub is not reachable from evalrepro's machines and users have mirrors, so a dataset
names each repo's source (``dataset.py``): a local git repo (path or ``file://`` URL), a
tar archive of one pinned by sha256, or one of the built-in demo repos, built here.

:func:`materialize` returns a :class:`LocalRepo` whose two exports feed the image layers
deterministically: the whole history as a bare repo (shared by a repo's instances) and
the tree of one commit (the instance's ``/testbed``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from evalrepro.dataset import ArchiveRepo, DemoRepo, LocalRepo, RepoSource
from evalrepro.digest import sha256_json
from evalrepro.errors import UserError

# git must not read the user's or the machine's config: it would leak into the exports.
_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_TERMINAL_PROMPT": "0",
    "LC_ALL": "C",
}


def git(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **_GIT_ENV, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RepoError(f"git {' '.join(args[:3])} failed: {done.stderr.strip()}")
    return done.stdout.strip()


class RepoError(Exception):
    """A repo source cannot be used (an infrastructure error of the trials that need it)."""


@dataclass(frozen=True)
class LocalCheckout:
    """A git repository on this machine, with a digest of what it holds."""

    repo: str
    git_dir: Path
    #: sha256 over the canonical JSON of the source's identity (refs, or archive digest).
    source_digest: str

    def has_commit(self, commit: str) -> bool:
        try:
            git("--git-dir", str(self.git_dir), "cat-file", "-e", f"{commit}^{{commit}}")
        except RepoError:
            return False
        return True

    def export_history(self, dest: Path) -> None:
        """A bare repo at ``dest`` with every branch and tag, packed deterministically."""
        git("init", "--quiet", "--bare", "--template=", str(dest))
        git(
            "--git-dir",
            str(dest),
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            str(self.git_dir),
            "+refs/heads/*:refs/heads/*",
            "+refs/tags/*:refs/tags/*",
        )
        # One thread and no delta-base reordering keep the pack byte-identical across runs.
        git("--git-dir", str(dest), "-c", "pack.threads=1", "repack", "-a", "-d", "-q", "-f")
        for volatile in ("FETCH_HEAD", "logs", "info", "description"):
            target = dest / volatile
            if target.is_dir():
                shutil.rmtree(target)
            else:
                target.unlink(missing_ok=True)

    def export_tree(self, commit: str, dest: Path) -> None:
        """The files of ``commit`` at ``dest`` (no .git), independent of export-ignore."""
        dest.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as scratch:
            env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
            git("--git-dir", str(self.git_dir), "read-tree", commit, env=env)
            git(
                "--git-dir",
                str(self.git_dir),
                "--work-tree",
                str(dest),
                "checkout-index",
                "--all",
                "--force",
                env=env,
            )


def materialize(repo: str, source: RepoSource, cache_dir: Path) -> LocalCheckout:
    if isinstance(source, LocalRepo):
        return _local(repo, source)
    if isinstance(source, ArchiveRepo):
        return _archive(repo, source, cache_dir)
    if isinstance(source, DemoRepo):
        return _demo(repo, source, cache_dir)
    raise AssertionError(f"unhandled repo source {source!r}")


def _git_dir(path: Path) -> Path:
    return Path(git("rev-parse", "--absolute-git-dir", cwd=path))


def _refs_digest(repo: str, git_dir: Path) -> str:
    refs = git("--git-dir", str(git_dir), "for-each-ref", "--format=%(objectname) %(refname)")
    return sha256_json({"repo": repo, "refs": sorted(refs.splitlines())})


def _local(repo: str, source: LocalRepo) -> LocalCheckout:
    path = Path(source.path.removeprefix("file://")).expanduser()
    if not path.exists():
        raise UserError(f"repo '{repo}': local source {source.path} does not exist")
    try:
        git_dir = _git_dir(path)
    except RepoError:
        raise UserError(f"repo '{repo}': {source.path} is not a git repository") from None
    return LocalCheckout(repo, git_dir, _refs_digest(repo, git_dir))


def _archive(repo: str, source: ArchiveRepo, cache_dir: Path) -> LocalCheckout:
    expected = source.sha256.removeprefix("sha256:")
    actual = hashlib.sha256(Path(source.path).read_bytes()).hexdigest()
    if actual != expected:
        raise UserError(
            f"repo '{repo}': archive {source.path} has sha256 {actual}, the dataset pins {expected}"
        )
    dest = cache_dir / "repos" / f"archive-{expected}"
    if not dest.exists():
        staging = Path(tempfile.mkdtemp(dir=cache_dir / "repos", prefix=".archive-"))
        with tarfile.open(source.path) as archive:
            _safe_extract(archive, staging)
        os.replace(staging, dest)
    roots = [dest, *[child for child in dest.iterdir() if child.is_dir()]]
    for root in roots:
        try:
            git_dir = _git_dir(root)
        except RepoError:
            continue
        return LocalCheckout(repo, git_dir, sha256_json({"repo": repo, "archive": expected}))
    raise UserError(f"repo '{repo}': archive {source.path} holds no git repository")


def _safe_extract(archive: tarfile.TarFile, dest: Path) -> None:
    """Extract refusing members that would land outside ``dest`` (absolute, .., links)."""
    if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4
        archive.extractall(dest, filter="data")
        return
    root = dest.resolve()
    for member in archive.getmembers():
        target = (dest / member.name).resolve()
        link = (target.parent / member.linkname).resolve() if member.issym() else target
        if member.isdev() or not all(p.is_relative_to(root) for p in (target, link)):
            raise UserError(f"archive member {member.name!r} would be written outside {dest}")
    archive.extractall(dest)


def _demo(repo: str, source: DemoRepo, cache_dir: Path) -> LocalCheckout:
    from evalrepro.demo.repos import build_repo, repo_names

    if source.name not in repo_names():
        raise UserError(f"repo '{repo}': no demo repo '{source.name}' (known: {repo_names()})")
    parent = cache_dir / "repos"
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=parent, prefix=f".demo-{source.name}-"))
    try:
        commits = build_repo(source.name, staging / "repo")
        dest = parent / f"demo-{source.name}-{commits[list(commits)[-1]][:16]}"
        if not dest.exists():
            os.replace(staging / "repo", dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return LocalCheckout(
        repo, _git_dir(dest), sha256_json({"repo": repo, "demo": source.name, "commits": commits})
    )
