"""Hermetic git, and the few questions asked of a repository.

git runs with no system or global config and none of the caller's ``GIT_*`` variables
(network fetches excepted: they may use the user's transport settings, since fetched
objects are checked against their ids), and always with its repository named, never
discovered.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Collection, Sequence
from pathlib import Path

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


FULL_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def present(git_dir: Path, commits: Collection[str]) -> dict[str, str]:
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


def tips(git_dir: Path) -> list[tuple[str, str]]:
    """The branches and tags: (ref, object id)."""
    out = git(
        "for-each-ref",
        "--format=%(refname) %(objectname)",
        "refs/heads",
        "refs/tags",
        git_dir=git_dir,
    )
    return [(ref, oid) for ref, oid in (line.split(" ") for line in out.splitlines())]


def unreachable(git_dir: Path, commits: Collection[str]) -> set[str]:
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
