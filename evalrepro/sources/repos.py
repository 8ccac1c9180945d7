"""Repository sources: where a dataset's git histories come from, made local.

GitHub is not reachable from every machine and users have mirrors, so a dataset names
where its histories are (``repos:`` per repo, ``instance_repos:`` per instance id), each
entry one source or a list of them:

* ``local``: a git repository on this machine (the repository itself: its work tree's
  top, or a bare / ``.git`` directory), used in place;
* ``archive``: a tar (plain, gz, bz2, xz) or zip file pinned by sha256 over its bytes.
  If it holds a git repository (a ``.git`` directory, or a bare repo, at its top or in a
  top-level directory), that repository is the source. Otherwise it is a plain source
  tree, an sdist: its files become one commit made the same on every machine
  (:func:`sdist_commit`, ``python -m evalrepro.sources.repos sdist-commit FILE``);
* ``remote``: a git URL (https, http, ssh, git, file), fetched into the cache at plan time,
  pinned by the dataset's base commits: its history is the ancestry of the base commits
  it serves, nothing the remote's branches point at today;
* ``demo``: one of the built-in demo repos, built here.

Which source serves an instance (:func:`resolve_sources`): its ``instance_repos`` entry if
it has one, else its repo's ``repos`` entry; of a list, the first source (in the order
listed) whose history has the base commit. A source that cannot be read (a remote that
cannot be reached) before the commit is found makes the instance unavailable (an
infrastructure error), never silently served by a later source: which source serves an
instance depends on what the sources hold, not on what the network did today.

Every source gives a :class:`LocalCheckout` whose two exports feed the image layers
deterministically: the history as a bare repo and the tree of one commit. Its
``source_digest`` is a digest of exactly the refs the history export holds, so sources
with the same history share one history layer, whatever their kind or repo name.

git runs with no system or global config and none of the caller's ``GIT_*`` variables
(network fetches excepted: they may use the user's transport settings, since fetched
objects are checked against their ids), and always with its repository named, never
discovered, except for a ``local`` source, whose path is looked up but not above itself.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path, PurePosixPath
from typing import IO, Annotated, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, FilePath, Tag, TypeAdapter

from evalrepro.config.sample import Sample
from evalrepro.digest import sha256_json
from evalrepro.errors import UserError

# --- the config models ------------------------------------------------------------------


class LocalRepo(BaseModel):
    """A git repository on this machine: a path or a file:// URL, used in place."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["local"] = "local"
    #: The repository itself (its work tree's top, or a bare / .git directory), or a
    #: file:// URL of it; used in place, never looked up above this path.
    path: str


class ArchiveRepo(BaseModel):
    """A tar or zip file of a git repository or of a source tree (an sdist), pinned by
    sha256 over its bytes."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["archive"] = "archive"
    #: A tar (plain, gz, bz2, xz) or zip file: of a git repository, or of a source tree
    #: (an sdist: its files become one commit, see
    #: `python -m evalrepro.sources.repos sdist-commit`).
    path: FilePath
    #: sha256 over the archive's bytes (`sha256:` prefix optional); a mismatch is refused.
    sha256: str = Field(pattern=r"^(sha256:)?[0-9a-f]{64}$")


class RemoteRepo(BaseModel):
    """A git repository behind a URL, fetched into the cache, pinned by the base commits."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["remote"] = "remote"
    #: The repository's URL: `https://`, `http://`, `ssh://`, `git://`, `file://` or
    #: scp-like `user@host:path`; fetched at plan time, only the base commits it serves.
    url: str = Field(pattern=r"^((https?|ssh|git|file)://\S+|[\w.-]+@[\w.-]+:\S+)$")


class DemoRepo(BaseModel):
    """One of evalrepro's built-in demo repos, whose history is built at run time."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["demo"] = "demo"
    #: The demo repo's name (`calc`, `ledger`, `textkit`).
    name: str


RepoSource = Annotated[LocalRepo | ArchiveRepo | RemoteRepo | DemoRepo, Field(discriminator="kind")]


def _shape(value: object) -> str:
    return "sources" if isinstance(value, list) else "source"


#: One source, or several searched in order (the first whose history has the commit).
#: The tag (``source`` / ``sources``) keeps a config error to the shape that was meant.
Sources = Annotated[
    Annotated[RepoSource, Tag("source")]
    | Annotated[Annotated[list[RepoSource], Field(min_length=1)], Tag("sources")],
    Discriminator(_shape),
]

_SOURCE = TypeAdapter(RepoSource)


class SourceConfig(BaseModel):
    """Where a dataset's base commits are: per repo, and per instance id (which wins)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    #: Where each repo's history is, by repo name (the instances' `repo`): one source, or
    #: a list of them searched in order (the first whose history has the commit serves).
    repos: dict[str, Sources] = Field(default_factory=dict)
    #: Where an instance's history is, by instance id, instead of its repo's: one source
    #: or a list, as under `repos`.
    instance_repos: dict[str, Sources] = Field(default_factory=dict)

    def sources_for(self, sample: Sample) -> tuple[RepoSource, ...]:
        """The sources searched for ``sample``'s base commit, in order (empty: none)."""
        found = self.instance_repos.get(sample.instance_id, self.repos.get(sample.repo, []))
        return tuple(found) if isinstance(found, list) else (found,)


# --- git, without the machine ---------------------------------------------------------

#: Ours, for every command: no system or global config, no replace refs or grafts
#: (they change what a commit looks like), no prompts, C locale.
_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_GRAFT_FILE": os.devnull,
    "GIT_TERMINAL_PROMPT": "0",
    "LC_ALL": "C",
}
#: The caller's git variables that a network fetch keeps: how to reach the forge.
_TRANSPORT_ENV = ("GIT_SSH", "GIT_ASKPASS", "GIT_SSL_", "GIT_HTTP_", "GIT_PROXY_", "GIT_TRACE")
#: Transports a remote source may use (``ext::`` and the like run commands).
_PROTOCOLS = "file:git:http:https:ssh"

#: Per-command settings that beat a repository's own config: line endings, attribute and
#: ignore files, hooks and signing stay out of the commits we make and the trees we export.
PINNED_CONFIG = (
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.fileMode=true",
    f"core.attributesFile={os.devnull}",
    f"core.excludesFile={os.devnull}",
    f"core.hooksPath={os.devnull}",
    "commit.gpgSign=false",
    "i18n.commitEncoding=UTF-8",
)


class RepoError(Exception):
    """A repo source cannot be used (an infrastructure error of the trials that need it)."""


def git(
    *args: str,
    git_dir: Path | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    input: str | None = None,
    network: bool = False,
) -> str:
    """Run git on ``git_dir`` (named, never discovered), hermetically; its stdout."""
    inherited = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("GIT_") or (network and key.startswith(_TRANSPORT_ENV))
    }
    ours = dict(_GIT_ENV)
    if network:
        # Credentials, proxies and url rewrites live in the user's config; what is
        # fetched is checked against the commit ids asked for, so it cannot change.
        del ours["GIT_CONFIG_NOSYSTEM"], ours["GIT_CONFIG_GLOBAL"]
        ours["GIT_ALLOW_PROTOCOL"] = _PROTOCOLS
    command = ["git"]
    if git_dir is not None:
        command += ["--git-dir", str(git_dir)]
        # A named git dir is never discovered; the ceiling keeps it so should git look.
        ours["GIT_CEILING_DIRECTORIES"] = str(git_dir.parent)
    done = subprocess.run(
        [*command, *args],
        cwd=cwd or "/",
        env={**inherited, **ours, **(env or {})},
        input=input,
        capture_output=True,
        encoding="utf-8",
        errors="surrogateescape",  # paths are bytes; they round-trip
        check=False,
    )
    if done.returncode != 0:
        raise RepoError(f"git {_subcommand(args)} failed: {' '.join(done.stderr.split())[:500]}")
    return done.stdout.strip()


def _subcommand(args: Sequence[str]) -> str:
    """``fetch`` of ``-c protocol.version=2 fetch ...``: what failed, for messages."""
    rest = iter(args)
    for arg in rest:
        if arg in ("-c", "--work-tree"):
            next(rest, None)
        elif not arg.startswith("-"):
            return arg
    return "?"


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


def _present(git_dir: Path, commits: Collection[str]) -> dict[str, str]:
    """Which of ``commits`` are commits in ``git_dir``: given name -> full commit id."""
    names = sorted(c for c in commits if c and not any(ch.isspace() for ch in c))
    if not names:
        return {}
    out = git(
        "cat-file",
        "--batch-check",
        git_dir=git_dir,
        input="".join(f"{name}^{{commit}}\n" for name in names),
    )
    found = {}
    for name, line in zip(names, out.splitlines(), strict=True):
        oid, _, kind = line.partition(" ")
        if kind.startswith("commit"):
            found[name] = oid
    return found


def _tips(git_dir: Path) -> list[tuple[str, str]]:
    """The branches and tags: (ref, object id)."""
    out = git(
        "for-each-ref",
        "--format=%(refname) %(objectname)",
        "refs/heads",
        "refs/tags",
        git_dir=git_dir,
    )
    return [(ref, oid) for ref, oid in (line.split(" ") for line in out.splitlines())]


def _unreachable(git_dir: Path, commits: Collection[str]) -> set[str]:
    """Those of ``commits`` that no branch or tag reaches."""
    if not commits:
        return set()
    try:
        out = git(
            "rev-list",
            "--stdin",
            "--not",
            "--branches",
            "--tags",
            git_dir=git_dir,
            input="".join(f"{c}\n" for c in sorted(commits)),
        )
    except RepoError:
        return set(commits)  # an odd ref (a tag of a tree): pin them all, to be sure
    return set(commits) & set(out.split())


# --- what the image layers are built from -----------------------------------------------

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
        return bool(_present(self.git_dir, [commit]))

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


# --- sources, made local ----------------------------------------------------------------


class _GitDir:
    """A source that is a whole repository: its branches and tags are its history."""

    def __init__(self, name: str, git_dir: Path) -> None:
        self.name = name
        self.git_dir = git_dir

    def find(self, commits: Collection[str]) -> tuple[dict[str, str], str | None]:
        """Which commits it has (given -> full id), and why the rest are unknown (None:
        they are not there)."""
        return _present(self.git_dir, commits), None

    def checkout(self, commits: Collection[str]) -> LocalCheckout:
        """The checkout that serves ``commits`` (full ids it has)."""
        pins = [(PIN_PREFIX + c, c) for c in _unreachable(self.git_dir, commits)]
        return LocalCheckout(self.name, self.git_dir, tuple(sorted([*_tips(self.git_dir), *pins])))


class _Remote:
    """A URL and its cache; a commit is fetched once, the first time it is wanted."""

    def __init__(self, url: str, cache_dir: Path) -> None:
        self.url = url
        self.name = f"remote {_redacted(url)}"
        parent = cache_dir / "repos"
        slug = "remote-" + hashlib.sha256(url.encode()).hexdigest()[:32]
        self.git_dir = parent / f"{slug}.git"
        self.lock = parent / f"{slug}.lock"
        _make_once(self.git_dir, lambda staging: init_repository(staging, bare=True))

    def find(self, commits: Collection[str]) -> tuple[dict[str, str], str | None]:
        ids = {c: c.lower() for c in commits if _FULL_ID.fullmatch(c.lower())}
        have = _present(self.git_dir, set(ids.values()))
        if len(have) < len(set(ids.values())):
            with _locked(self.lock):
                error = self._fetch(sorted(set(ids.values()) - set(have)))
            have = _present(self.git_dir, set(ids.values()))
        else:
            error = None
        return {given: have[oid] for given, oid in ids.items() if oid in have}, error

    def _fetch(self, wanted: list[str]) -> str | None:
        """Fetch ``wanted`` (full ids); an error only if the remote could not be asked."""
        have = _present(self.git_dir, wanted)
        missing = [c for c in wanted if c not in have]
        while missing:
            try:
                self._git_fetch([f"{c}:{PIN_PREFIX}{c}" for c in missing])
                break
            except RepoError as error:
                # "not our ref <id>": the remote lacks that one; ask again for the rest.
                named = [c for c in missing if c in str(error)]
                if not named:
                    break
                missing = [c for c in missing if c not in named]
        have = _present(self.git_dir, wanted)
        missing = [c for c in wanted if c not in have]
        if missing:
            # A server that serves only what its refs advertise (protocol v0, no
            # allowAnySHA1InWant) still has every commit a branch or a tag reaches.
            try:
                self._git_fetch(
                    ["+refs/heads/*:refs/tips/heads/*", "+refs/tags/*:refs/tips/tags/*"]
                )
            except RepoError as error:
                return _redacted(f"cannot fetch from {self.url}: {error}")
            found = _present(self.git_dir, missing)
            if found:
                git(
                    "update-ref",
                    "--stdin",
                    git_dir=self.git_dir,
                    input="".join(f"update {PIN_PREFIX}{c} {c}\n" for c in found),
                )
        return None

    def _git_fetch(self, refspecs: list[str]) -> None:
        git(
            "-c",
            "protocol.version=2",
            "-c",
            "http.lowSpeedLimit=1000",
            "-c",
            "http.lowSpeedTime=120",
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-prune",
            "--no-write-fetch-head",
            "--no-recurse-submodules",
            "--no-auto-gc",
            "--stdin",
            self.url,
            git_dir=self.git_dir,
            input="".join(f"{r}\n" for r in refspecs),
            network=True,
        )

    def checkout(self, commits: Collection[str]) -> LocalCheckout:
        refs = tuple(sorted((PIN_PREFIX + c, c) for c in commits))
        return LocalCheckout(self.name, self.git_dir, refs)


_FULL_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_Source = _GitDir | _Remote


def _redacted(text: str) -> str:
    """``text`` without the passwords or tokens of its URLs (``https://user:token@host``
    -> ``https://***@host``): messages end up in logs and run directories."""
    return re.sub(r"([a-z][a-z0-9+.-]*://)[^/@\s'\"]*@", r"\1***@", text)


def _open(source: RepoSource, cache_dir: Path) -> _Source:
    if isinstance(source, LocalRepo):
        return _local(source)
    if isinstance(source, ArchiveRepo):
        return _archive(source, cache_dir)
    if isinstance(source, RemoteRepo):
        return _Remote(source.url, cache_dir)
    if isinstance(source, DemoRepo):
        return _demo(source, cache_dir)
    raise AssertionError(f"unhandled repo source {source!r}")


def _local(source: LocalRepo) -> _GitDir:
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
    return _GitDir(f"local {source.path}", Path(found))


def _demo(source: DemoRepo, cache_dir: Path) -> _GitDir:
    from evalrepro.demo.repos import build_repo, repo_names

    if source.name not in repo_names():
        raise UserError(f"no demo repo '{source.name}' (known: {repo_names()})")
    parent = cache_dir / "repos"
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=parent, prefix=f".demo-{source.name}-"))
    try:
        commits = build_repo(source.name, staging / "repo")
        dest = parent / f"demo-{source.name}-{commits[list(commits)[-1]][:16]}"
        if not dest.exists():
            try:
                os.replace(staging / "repo", dest)
            except OSError:
                if not dest.exists():  # else another process put the same repo there
                    raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return _GitDir(f"demo {source.name}", dest / ".git")


def _make_once(dest: Path, make: Callable[[Path], object]) -> None:
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


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One process at a time (a fetch into a shared cache)."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# --- archives -----------------------------------------------------------------------------

#: The commit a source tree is given: fixed, so its SHA depends on the files alone.
SDIST_SIGNATURE = Signature("evalrepro", "sdist@evalrepro.invalid", 946_684_800)  # 2000-01-01
SDIST_MESSAGE = "Source distribution"


def _archive(source: ArchiveRepo, cache_dir: Path) -> _GitDir:
    path = Path(source.path)
    expected = source.sha256.removeprefix("sha256:")
    actual = _file_sha256(path)
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
    return _GitDir(f"archive {path}", found)


def _cached_archive(extracted: Path, sdist: Path, archive: Path) -> Path | None:
    if sdist.is_dir():
        return sdist
    if extracted.is_dir():
        found = _git_dir_in(extracted, archive)
        if found is not None:
            return found
        shutil.rmtree(extracted)  # a source tree an older evalrepro left unpacked: redo it
    return None


def _unpack(archive: Path, parent: Path, extracted: Path, sdist: Path) -> None:
    with tempfile.TemporaryDirectory(dir=parent, prefix=".archive-") as scratch:
        tree = Path(scratch) / "tree"
        _extract(archive, tree)
        found = _git_dir_in(tree, archive)
        if found is not None:
            _neutralize(found)
            _make_once(extracted, partial(os.replace, tree))
        else:
            _make_once(sdist, partial(_commit_sdist, tree, archive=archive))


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _git_dir_in(root: Path, archive: Path) -> Path | None:
    """The git dir an extracted archive holds: at its top or in a top-level directory."""
    candidates = [root, *sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink())]
    for candidate in candidates:
        dot_git = candidate / ".git"
        if dot_git.is_symlink() or dot_git.is_file():
            # A gitfile or a link points at a repository elsewhere on this machine.
            raise UserError(
                f"archive {archive}: {dot_git.relative_to(root)} points elsewhere "
                "(a worktree or submodule): archive the repository itself"
            )
        for git_dir in (dot_git, candidate):
            if all((git_dir / part).exists() for part in ("HEAD", "objects", "refs")):
                return git_dir
    return None


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


def _commit_sdist(tree: Path, dest: Path, archive: Path) -> None:
    git_dir = init_repository(dest, bare=True)
    try:
        commit_directory(
            _strip_top(tree),
            git_dir,
            signature=SDIST_SIGNATURE,
            message=SDIST_MESSAGE,
            index_file=dest.parent / "index",
        )
    except RepoError as error:
        raise UserError(f"archive {archive}: its files cannot be one commit ({error})") from None


def _strip_top(tree: Path) -> Path:
    """The tree without the one top-level directory an sdist has (``name-1.0/``)."""
    entries = list(tree.iterdir())
    if len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink():
        return entries[0]
    return tree


def sdist_commit(archive: Path) -> str:
    """The base commit of a source tree archive (an sdist .tar.gz or .zip, no .git).

    One commit, no parent, on branch ``main``, of the archive's files after stripping
    the single top-level directory if that is all the archive holds: each regular file
    byte for byte, mode 100755 if its owner may execute it and 100644 otherwise,
    symlinks as links, empty directories dropped; no ``.gitignore`` or ``.gitattributes``
    applies. Author and committer ``evalrepro <sdist@evalrepro.invalid>``, both dated
    2000-01-01T00:00:00Z (+0000), message ``Source distribution``; SHA-1 object ids. It
    depends on the files alone: the same on every machine, under any git config, and the
    same for a .zip and a .tar.gz of the same files.
    """
    with tempfile.TemporaryDirectory(prefix="evalrepro-sdist-") as scratch:
        tree = Path(scratch) / "tree"
        _extract(archive, tree)
        if _git_dir_in(tree, archive) is not None:
            raise UserError(
                f"archive {archive} holds a git repository: its base commits are its own"
            )
        dest = Path(scratch) / "repo.git"
        _commit_sdist(tree, dest, archive)
        return git("rev-parse", "refs/heads/main", git_dir=dest)


def _extract(archive: Path, dest: Path) -> None:
    """Unpack a tar or zip into ``dest`` refusing what would land outside it (absolute
    names, ``..``, links out, writes through links) and anything but files, directories
    and links. Modes are 0755 / 0644 by the owner's execute bit, whatever the umask."""
    dest.mkdir(parents=True)
    with archive.open("rb") as handle:
        zipped = handle.read(4) in (b"PK\x03\x04", b"PK\x05\x06")
    unpack = _Unpacker(archive, dest)
    try:
        if zipped:
            with zipfile.ZipFile(archive) as bundle:
                for info in bundle.infolist():
                    mode = info.external_attr >> 16 if info.create_system == 3 else 0
                    if info.is_dir():
                        unpack.directory(info.filename)
                    elif stat.S_ISLNK(mode):
                        unpack.symlink(info.filename, bundle.read(info).decode())
                    else:
                        with bundle.open(info) as data:
                            unpack.file(info.filename, data, bool(mode & stat.S_IXUSR))
            return
        with tarfile.open(archive) as bundle:
            for member in bundle:
                if member.isdir():
                    unpack.directory(member.name)
                elif member.isreg():
                    data = bundle.extractfile(member)
                    assert data is not None
                    unpack.file(member.name, data, bool(member.mode & stat.S_IXUSR))
                elif member.issym():
                    unpack.symlink(member.name, member.linkname)
                elif member.islnk():
                    unpack.hardlink(member.name, member.linkname)
                else:
                    raise UserError(
                        f"archive {archive}: member {member.name!r} is a device or fifo"
                    )
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, RuntimeError) as error:
        raise UserError(f"archive {archive}: cannot be unpacked ({error})") from None


class _Unpacker:
    def __init__(self, archive: Path, root: Path) -> None:
        self.archive = archive
        self.root = root

    def _target(self, name: str) -> Path:
        parts = [part for part in PurePosixPath(name).parts if part not in ("", ".")]
        if not parts or name.startswith("/") or ".." in parts:
            raise UserError(f"archive {self.archive}: member {name!r} would land outside it")
        here = self.root
        for part in parts[:-1]:  # nothing may be written through a link
            here = here / part
            if here.is_symlink() or (here.exists() and not here.is_dir()):
                raise UserError(f"archive {self.archive}: member {name!r} goes through a link")
        return self.root.joinpath(*parts)

    def _replace(self, target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.is_file():
            target.unlink()  # a later member of the same name wins, as tar does
        elif target.exists():
            raise UserError(f"archive {self.archive}: {target.name!r} is a file and a folder")

    def directory(self, name: str) -> None:
        target = self._target(name)
        if target.is_symlink():
            raise UserError(f"archive {self.archive}: member {name!r} goes through a link")
        target.mkdir(parents=True, exist_ok=True)
        target.chmod(0o755)

    def file(self, name: str, data: IO[bytes], executable: bool) -> None:
        target = self._target(name)
        self._replace(target)
        with target.open("wb") as out:
            shutil.copyfileobj(data, out)
        target.chmod(0o755 if executable else 0o644)

    def symlink(self, name: str, link: str) -> None:
        target = self._target(name)
        inside = os.path.normpath(os.path.join(os.path.dirname(name), link))
        if os.path.isabs(link) or inside == ".." or inside.startswith("../"):
            raise UserError(f"archive {self.archive}: link {name!r} -> {link!r} leaves it")
        self._replace(target)
        target.symlink_to(link)

    def hardlink(self, name: str, linked: str) -> None:
        source = self._target(linked)
        if source.is_symlink() or not source.is_file():
            raise UserError(f"archive {self.archive}: {name!r} links to no earlier file")
        target = self._target(name)
        self._replace(target)
        shutil.copyfile(source, target)
        target.chmod(source.stat().st_mode & 0o777)


# --- instances -> sources -----------------------------------------------------------------


@dataclass(frozen=True)
class ResolvedSources:
    """Which source serves each instance, and the checkouts their history layers need."""

    #: source key (the checkout's ``source_digest``) -> checkout; one per distinct history
    checkouts: dict[str, LocalCheckout]
    #: instance id -> source key, for each instance whose source is ready
    keys: dict[str, str]
    #: instance id -> why its source could not be read (an infrastructure error)
    unavailable: dict[str, str]

    def checkout(self, instance_id: str) -> LocalCheckout:
        return self.checkouts[self.keys[instance_id]]


def resolve_sources(
    config: SourceConfig,
    samples: Sequence[Sample],
    cache_dir: Path,
    *,
    dataset: str,
    selected: Collection[str] | None = None,
) -> ResolvedSources:
    """Find each instance's base commit in its sources, first source first.

    ``samples`` are all the dataset's instances; ``selected`` the ids to resolve (default
    all). The others still count where they share a source with a selected instance: a
    remote source's history is the ancestry of every base commit it serves, so a
    selection of instances gets the same history layers as the whole dataset.

    Refuses (one line) an instance without sources or whose base commit is in none of
    them, and ``instance_repos`` entries that name no instance.
    """
    cache_dir = Path(cache_dir).absolute()
    known = {sample.instance_id for sample in samples}
    stray = sorted(set(config.instance_repos) - known)
    if stray:
        raise UserError(
            f"dataset '{dataset}': instance_repos names {len(stray)} instance(s) not in the "
            f"dataset: {', '.join(stray[:5])}"
        )
    chosen = [s for s in samples if selected is None or s.instance_id in selected]
    for sample in chosen:
        if not config.sources_for(sample):
            raise UserError(
                f"dataset '{dataset}': no source for repo '{sample.repo}' (instance "
                f"'{sample.instance_id}'): add it under repos: or instance_repos:"
            )
    needed = {source for sample in chosen for source in config.sources_for(sample)}
    chosen_ids = {sample.instance_id for sample in chosen}
    others = [
        s
        for s in samples
        if s.instance_id not in chosen_ids and needed & set(config.sources_for(s))
    ]
    walk = _Walk(config, cache_dir, dataset, strict=chosen_ids)
    walk.run([*chosen, *others])

    nowhere = [sample for sample in chosen if sample.instance_id in walk.nowhere]
    if nowhere:
        first = nowhere[0]
        listed = ", ".join(walk.label(s) for s in config.sources_for(first))
        hint = "" if _FULL_ID.fullmatch(first.base_commit) else " (not a full commit id)"
        more = f"; and {len(nowhere) - 1} more instance(s)" if len(nowhere) > 1 else ""
        raise UserError(
            f"dataset '{dataset}': base commit {first.base_commit}{hint} of instance "
            f"'{first.instance_id}' is in none of its sources ({listed}){more}"
        )

    served: dict[RepoSource, set[str]] = {}
    for source, oid in walk.landed.values():
        served.setdefault(source, set()).add(oid)
    checkouts: dict[str, LocalCheckout] = {}
    keys: dict[str, str] = {}
    unavailable = {i: reason for i, reason in walk.failed.items() if i in chosen_ids}
    by_source: dict[RepoSource, str | Exception] = {}
    for sample in chosen:
        if sample.instance_id not in walk.landed:
            continue
        source = walk.landed[sample.instance_id][0]
        if source not in by_source:
            try:
                made = walk.opened(source).checkout(served[source])
                by_source[source] = checkouts.setdefault(made.source_digest, made).source_digest
            except RepoError as error:
                by_source[source] = error
        key = by_source[source]
        if isinstance(key, Exception):
            unavailable[sample.instance_id] = f"{walk.label(sample)}: {key}"
        else:
            keys[sample.instance_id] = key
    return ResolvedSources(checkouts=checkouts, keys=keys, unavailable=unavailable)


class _Walk:
    """Instances walk their source lists in rounds; each round asks each source once for
    all the commits that reached it (one fetch per remote, not one per instance)."""

    def __init__(
        self, config: SourceConfig, cache_dir: Path, dataset: str, strict: Collection[str]
    ) -> None:
        self.config = config
        self.cache_dir = cache_dir
        self.dataset = dataset
        self.strict = strict
        self._opened: dict[RepoSource, _Source | Exception] = {}
        #: instance id -> (source, full commit id)
        self.landed: dict[str, tuple[RepoSource, str]] = {}
        #: instance id -> why a source before its commit could not be read
        self.failed: dict[str, str] = {}
        #: instances whose every source was read, none with the commit
        self.nowhere: set[str] = set()

    def opened(self, source: RepoSource) -> _Source:
        made = self._opened[source]
        assert not isinstance(made, Exception)
        return made

    def label(self, sample_or_source: Sample | RepoSource) -> str:
        if isinstance(sample_or_source, Sample):
            source = self.landed.get(sample_or_source.instance_id, (None,))[0]
            if source is None:
                return "its source"
            return self.label(source)
        made = self._opened.get(sample_or_source)
        if made is not None and not isinstance(made, Exception):
            return made.name
        described = {
            "local": "path",
            "archive": "path",
            "remote": "url",
            "demo": "name",
        }[sample_or_source.kind]
        value = str(getattr(sample_or_source, described))
        if sample_or_source.kind == "remote":
            value = _redacted(value)
        return f"{sample_or_source.kind} {value}"

    def _open(self, source: RepoSource, strict: bool) -> _Source | Exception:
        if source not in self._opened:
            try:
                self._opened[source] = _open(source, self.cache_dir)
            except (UserError, RepoError) as error:
                self._opened[source] = error
        made = self._opened[source]
        if isinstance(made, UserError) and strict:
            # Bad config is refused, but only when an instance being run needs it.
            raise UserError(f"dataset '{self.dataset}': {made}")
        return made

    def run(self, samples: Sequence[Sample]) -> None:
        lists = {s.instance_id: self.config.sources_for(s) for s in samples}
        commit = {s.instance_id: s.base_commit for s in samples}
        position = dict.fromkeys(lists, 0)
        pending = [s.instance_id for s in samples if lists[s.instance_id]]
        while pending:
            rounds: dict[RepoSource, list[str]] = {}
            for instance in pending:
                rounds.setdefault(lists[instance][position[instance]], []).append(instance)
            pending = []
            for source, instances in rounds.items():
                made = self._open(source, strict=any(i in self.strict for i in instances))
                if isinstance(made, Exception):
                    found, error = {}, str(made)
                else:
                    found, error = made.find({commit[i] for i in instances})
                for instance in instances:
                    if commit[instance] in found:
                        self.landed[instance] = (source, found[commit[instance]])
                    elif error is not None:
                        self.failed[instance] = f"{self.label(source)}: {error}"
                    elif position[instance] + 1 < len(lists[instance]):
                        position[instance] += 1
                        pending.append(instance)
                    else:
                        self.nowhere.add(instance)


def materialize(repo: str, source: object, cache_dir: Path) -> LocalCheckout:
    """One source alone, with its branches and tags (no base commits pinned).

    What ``plan.py`` called before :func:`resolve_sources`; it also takes the source
    models ``dataset.py`` defined before they moved here.
    """
    if not isinstance(source, LocalRepo | ArchiveRepo | RemoteRepo | DemoRepo):
        source = _SOURCE.validate_python(source.model_dump())  # type: ignore[attr-defined]
    try:
        return _open(source, Path(cache_dir).absolute()).checkout(())
    except UserError as error:
        raise UserError(f"repo '{repo}': {error}") from None


# --- python -m evalrepro.sources.repos ------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evalrepro.sources.repos")
    commands = parser.add_subparsers(dest="command", required=True)
    sdist = commands.add_parser(
        "sdist-commit", help="the base commit and sha256 of a source tree archive (an sdist)"
    )
    sdist.add_argument("archive", type=Path)
    args = parser.parse_args(argv)
    try:
        if not args.archive.is_file():
            raise UserError(f"{args.archive}: no such file")
        commit = sdist_commit(args.archive)
    except (UserError, RepoError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"base_commit: {commit}\nsha256: {_file_sha256(args.archive)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
