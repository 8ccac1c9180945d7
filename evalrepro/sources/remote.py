"""``remote`` sources: a git URL (https, http, ssh, git, file), fetched into the cache.

Fetched at plan time, pinned by the dataset's base commits: its history is the ancestry
of the base commits it serves, nothing the remote's branches point at today.
"""

from __future__ import annotations

import fcntl
import hashlib
import re
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from evalrepro.sources.checkout import PIN_PREFIX, LocalCheckout, make_once
from evalrepro.sources.commits import init_repository
from evalrepro.sources.git import FULL_ID, RepoError, git, present


class RemoteRepo(BaseModel):
    """A git repository behind a URL, fetched into the cache, pinned by the base commits."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["remote"] = "remote"
    #: The repository's URL: `https://`, `http://`, `ssh://`, `git://`, `file://` or
    #: scp-like `user@host:path`; fetched at plan time, only the base commits it serves.
    url: str = Field(pattern=r"^((https?|ssh|git|file)://\S+|[\w.-]+@[\w.-]+:\S+)$")


class Remote:
    """A URL and its cache; a commit is fetched once, the first time it is wanted."""

    def __init__(self, url: str, cache_dir: Path) -> None:
        self.url = url
        self.name = f"remote {redacted(url)}"
        parent = cache_dir / "repos"
        slug = "remote-" + hashlib.sha256(url.encode()).hexdigest()[:32]
        self.git_dir = parent / f"{slug}.git"
        self.lock = parent / f"{slug}.lock"
        make_once(self.git_dir, lambda staging: init_repository(staging, bare=True))

    def find(self, commits: Collection[str]) -> tuple[dict[str, str], str | None]:
        ids = {c: c.lower() for c in commits if FULL_ID.fullmatch(c.lower())}
        have = present(self.git_dir, set(ids.values()))
        if len(have) < len(set(ids.values())):
            with _locked(self.lock):
                error = self._fetch(sorted(set(ids.values()) - set(have)))
            have = present(self.git_dir, set(ids.values()))
        else:
            error = None
        return {given: have[oid] for given, oid in ids.items() if oid in have}, error

    def _fetch(self, wanted: list[str]) -> str | None:
        """Fetch ``wanted`` (full ids); an error only if the remote could not be asked."""
        have = present(self.git_dir, wanted)
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
        have = present(self.git_dir, wanted)
        missing = [c for c in wanted if c not in have]
        if missing:
            # A server that serves only what its refs advertise (protocol v0, no
            # allowAnySHA1InWant) still has every commit a branch or a tag reaches.
            try:
                self._git_fetch(
                    ["+refs/heads/*:refs/tips/heads/*", "+refs/tags/*:refs/tips/tags/*"]
                )
            except RepoError as error:
                return redacted(f"cannot fetch from {self.url}: {error}")
            found = present(self.git_dir, missing)
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


def redacted(text: str) -> str:
    """``text`` without the passwords or tokens of its URLs (``https://user:token@host``
    -> ``https://***@host``): messages end up in logs and run directories."""
    return re.sub(r"([a-z][a-z0-9+.-]*://)[^/@\s'\"]*@", r"\1***@", text)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One process at a time (a fetch into a shared cache)."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
