"""TestSpec: what one instance's trial runs, and its eval script, as data whose digest is
part of the trial id. Compiled by ``evalrepro.plan.testspec``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from evalrepro.digest import sha256_json
from evalrepro.records.base import Record, unchanged
from evalrepro.sandbox.infra import protected_reason


class ResolvedProtection(BaseModel):
    """The policy as one instance's TestSpec holds it: test folders made explicit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    policy: Literal["restore", "record", "invalid"]
    suspect: Literal["invalid", "record"]
    patterns: list[str]
    test_dirs: list[str]
    canaries: bool = True
    framework_sources: list[str] = []
    site_hooks: bool = False
    fresh_runs: int = 0
    second_runner: int = 0
    tests_read_git: bool = False

    def reason(self, path: str) -> str | None:
        """Why ``path`` is test infrastructure (sections of SECTION_FILES aside)."""
        return protected_reason(path, self.model_dump())


class EvalScript(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    base_commit: str
    #: The spec's test command with its directives.
    test_command: str
    #: Every file the test patch touches (written as base + test patch before the tests).
    test_files: list[str]
    test_patch_empty: bool
    patch_commands: list[tuple[str, list[str]]]
    protection: ResolvedProtection
    #: sha256 over the supervisor's and the exit guard's source bytes.
    sandbox: str


class OutsideFile(BaseModel):
    """A test file the command runs at the base commit that the test patch does not touch
    (``evalrepro.plan.outside``): its bytes are in the cache under their sha256."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    sha256: str
    size: int


def _no_debs(data: dict[str, Any]) -> dict[str, Any]:
    """A TestSpec of version 2 ran on the environment's plain base: no ``debs``."""
    return {**data, "debs": []}


class CommitTree(Record):
    """The regular files of one commit's tree, as ``git ls-tree -r -l`` lists them, kept
    in the cache by the commit's full id (``commit-trees/<id>.json``): a commit's tree
    never changes, so a warm plan lists it without git (``evalrepro.plan.outside``)."""

    record: Literal["CommitTree"] = "CommitTree"
    schema_version: int = 1
    commit: str
    #: path -> (blob id, size in bytes), for the files of mode 100644 and 100755
    files: dict[str, tuple[str, int]]


class TestSpec(Record):
    __test__ = False  # not a pytest test class
    record: Literal["TestSpec"] = "TestSpec"
    #: 2: ``outside_files`` and ``outside_left`` (the test files the command runs outside
    #: the test patch, where the trial's canaries go too). 3: ``debs`` and ``npm`` (a spec
    #: of version 2 had none).
    schema_version: int = 3
    migrations = {1: unchanged, 2: _no_debs}
    instance_id: str
    repo: str
    version: str
    base_commit: str
    #: None: the environment's base suite's own python3.
    python: str | None = None
    packages: list[str]
    #: The spec's Debian packages (its base layer's, beside the environment's own).
    debs: list[str] = []
    #: npm specifiers (``mocha@10.2.0``) or the repository path of a package-lock.json.
    npm: list[str] = []
    install: str | None
    test_cmd: str
    test_directives: list[str]
    parser: str
    fail_only: bool
    #: The test patch itself, by digest (the eval script applies it).
    test_patch_digest: str
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    eval_script: EvalScript
    #: The test files the command runs outside the test patch, found at plan time from
    #: the base's tree (bounded); empty where the plan had no source to read them from.
    outside_files: list[OutsideFile] = []
    #: How many more such files the bounds left out.
    outside_left: int = 0

    def digest(self) -> str:
        """sha256 over the canonical JSON of every field."""
        return sha256_json(self.model_dump(mode="json"))
