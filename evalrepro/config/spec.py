"""A repo's spec: one per (repo, version) of a dataset, like SWE-bench's per-repo version
table: environment packages, install command, test command, parser.

Configuration only: ``evalrepro.plan.testspec`` compiles an instance with its spec into
the TestSpec a trial runs.
"""

from __future__ import annotations

import re
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalrepro.npmnames import npm_specifier

#: The Python each Debian suite ships as ``python3``: a spec that names its Python gets
#: the base image of that suite (SWE-bench's specs pin 3.5 to 3.11; others are refused).
PYTHON_SUITES = {"3.9": "bullseye", "3.11": "bookworm", "3.13": "trixie"}
#: A Debian package name (Debian policy 5.6.1): what ``debs`` may hold.
DEB_NAME = re.compile(r"[a-z0-9][a-z0-9+.-]+")

#: What ``npm: lockfile`` means: the repository's own lockfile at its top.
NPM_LOCKFILE = "package-lock.json"
_NPM_LOCKFILE_NAMES = ("package-lock.json", "npm-shrinkwrap.json")


def npm_lockfile(npm: list[str]) -> str | None:
    """The repository path of the lockfile a spec's ``npm`` names, or None (specifiers)."""
    return npm[0] if len(npm) == 1 and npm[0].endswith(_NPM_LOCKFILE_NAMES) else None


class RepoSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The Python version the env layer needs (``"3.9"``); None: the base suite's own.
    python: str | None = None
    #: pip requirement specifiers of the env layer, pinned (``pkg==1.2``).
    packages: list[str] = Field(default_factory=list)
    #: Debian packages of the spec's toolchain (``golang-go``, ``default-jdk-headless``):
    #: installed, with their dependencies, into its base layer, one base per (suite, set of
    #: packages), each .deb pinned in the lockfile as the base's own are.
    debs: list[str] = Field(default_factory=list)
    #: npm packages of the env layer, unpacked into ``/node_modules`` (node comes from the
    #: base): exact registry specifiers (``mocha@10.2.0``), their closure resolved by npm
    #: and pinned at lock time; or ``lockfile`` (the repository's ``package-lock.json`` at
    #: the base commit) or the path of one in the repository, whose closure is taken.
    npm: list[str] = Field(default_factory=list)
    #: Run in the instance layer after checkout (e.g. ``pip install -e .``).
    install: str | None = None
    #: The test command; test directives (files) are appended to it.
    test_cmd: str = Field(min_length=1)
    #: ``test_patch``: the files the test patch touches; or an explicit list.
    test_directives: Literal["test_patch"] | list[str] = "test_patch"
    #: The log parser for its test output (`evalrepro parsers` lists them; its family must be the
    #: dataset's `test_ids`).
    parser: str

    @field_validator("python", mode="before")
    @classmethod
    def _known_python(cls, value: object) -> object:
        if value is None:
            return None
        version = str(value)
        if version not in PYTHON_SUITES:
            known = ", ".join(f"{v} ({suite})" for v, suite in PYTHON_SUITES.items())
            raise ValueError(
                f"python {version} is not the python3 of a Debian suite evalrepro builds "
                f"from; known: {known}"
            )
        return version

    @field_validator("debs")
    @classmethod
    def _deb_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not DEB_NAME.fullmatch(name):
                raise ValueError(f"not a Debian package name: {name!r}")
        return value

    @field_validator("npm", mode="before")
    @classmethod
    def _npm_entries(cls, value: object) -> object:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return value  # pydantic names the type error
        entries = [NPM_LOCKFILE if v == "lockfile" else v for v in value]
        lockfiles = [v for v in entries if v.endswith(_NPM_LOCKFILE_NAMES)]
        if lockfiles:
            if len(entries) > 1:
                raise ValueError(
                    f"a lockfile ({lockfiles[0]}) gives the whole closure: list it alone"
                )
            path = lockfiles[0]
            if path.startswith("/") or ".." in path.split("/") or "\\" in path:
                raise ValueError(f"{path!r} is not a path inside the repository")
            return entries
        seen: set[str] = set()
        for entry in entries:
            parsed = npm_specifier(entry)
            if parsed is None:
                raise ValueError(
                    f"{entry!r} is not an exact npm specifier (name@1.2.3: no ranges, tags "
                    "or URLs), nor 'lockfile' or the path of a package-lock.json"
                )
            if parsed[0] in seen:
                raise ValueError(f"npm package {parsed[0]} is listed twice")
            seen.add(parsed[0])
        return entries

    def suite(self, default: str) -> str:
        """The Debian suite of this spec's base image."""
        return PYTHON_SUITES[self.python] if self.python else default


class _SpecOfBase(Protocol):
    @property
    def python(self) -> str | None: ...
    @property
    def debs(self) -> list[str]: ...


def base_of(spec: _SpecOfBase, default_suite: str) -> tuple[str, tuple[str, ...]]:
    """The base image a spec (a RepoSpec or the TestSpec compiled from it) runs on: its
    Debian suite and the sorted set of its extra packages. Specs of one base share it; a
    spec without ``debs`` has the environment's plain base of its suite."""
    suite = PYTHON_SUITES[spec.python] if spec.python else default_suite
    return suite, tuple(sorted(set(spec.debs)))
