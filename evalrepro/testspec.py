"""TestSpec: an instance compiled against its repo's spec into what the harness runs.

A :class:`RepoSpec` is configuration, one per (repo, version), like SWE-bench's per-repo
version table: environment packages, install command, test command, parser. Compiling
a Sample with it gives a :class:`TestSpec`, whose digest covers every setting that can
change a result; trial ids include it.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from evalrepro.digest import sha256_bytes, sha256_json
from evalrepro.record import Record
from evalrepro.sample import Sample

_DIFF_HEADER = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.M)


class RepoSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: pip requirement specifiers of the env layer, pinned (``pkg==1.2``).
    packages: list[str] = Field(default_factory=list)
    #: Run in the instance layer after checkout (e.g. ``pip install -e .``).
    install: str | None = None
    #: The test command; test directives (files) are appended to it.
    test_cmd: str = Field(min_length=1)
    #: ``test_patch``: the files the test patch touches; or an explicit list.
    test_directives: Literal["test_patch"] | list[str] = "test_patch"
    parser: str


def files_touched(patch: str) -> list[str]:
    """Paths a unified git diff touches (new side), in order of appearance."""
    seen: dict[str, None] = {}
    for old, new in _DIFF_HEADER.findall(patch):
        seen[new if new != "/dev/null" else old] = None
    return list(seen)


class TestSpec(Record):
    record: Literal["TestSpec"] = "TestSpec"
    instance_id: str
    repo: str
    version: str
    base_commit: str
    packages: list[str]
    install: str | None
    test_cmd: str
    test_directives: list[str]
    parser: str
    fail_only: bool
    test_patch_files: list[str]
    #: The test patch itself, by digest (the eval script applies it).
    test_patch_digest: str
    fail_to_pass: list[str]
    pass_to_pass: list[str]

    @property
    def test_command(self) -> str:
        return " ".join([self.test_cmd, *self.test_directives])

    def digest(self) -> str:
        """sha256 over the canonical JSON of every field."""
        return sha256_json(self.model_dump(mode="json"))


def compile_test_spec(
    sample: Sample, spec: RepoSpec, *, parser: str, fail_only: bool
) -> TestSpec:
    touched = files_touched(sample.test_patch)
    directives = touched if spec.test_directives == "test_patch" else spec.test_directives
    return TestSpec(
        instance_id=sample.instance_id,
        repo=sample.repo,
        version=sample.version,
        base_commit=sample.base_commit,
        packages=spec.packages,
        install=spec.install,
        test_cmd=spec.test_cmd,
        test_directives=list(directives),
        parser=parser,
        fail_only=fail_only,
        test_patch_files=touched,
        test_patch_digest=sha256_bytes(sample.test_patch.encode()),
        fail_to_pass=sample.fail_to_pass,
        pass_to_pass=sample.pass_to_pass,
    )
