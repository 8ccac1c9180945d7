"""Dataset: where task instances come from, and the per-(repo, version) specs they run with.

A dataset is configuration (``conf/dataset/*.yaml``): the instances file, which parser
family its FAIL_TO_PASS / PASS_TO_PASS lists were produced by, where each repo's git
history comes from, and a spec per (repo, version). A user evaluates their own data by
writing such a file; no Python is needed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, FilePath, field_validator

from evalrepro.errors import UserError
from evalrepro.parsers import Family, LogParser, get_parser
from evalrepro.protection import TestProtection
from evalrepro.sample import Sample, load_samples
from evalrepro.testspec import RepoSpec, TestSpec, compile_test_spec


class LocalRepo(BaseModel):
    """A git repository on this machine: a path or a file:// URL."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["local"] = "local"
    path: str


class ArchiveRepo(BaseModel):
    """A source archive (tar) of a git repository, pinned by sha256 over its bytes."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["archive"] = "archive"
    path: FilePath
    sha256: str = Field(pattern=r"^(sha256:)?[0-9a-f]{64}$")


class DemoRepo(BaseModel):
    """One of evalrepro's built-in demo repos, whose history is built at run time."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["demo"] = "demo"
    name: str


RepoSource = Annotated[LocalRepo | ArchiveRepo | DemoRepo, Field(discriminator="kind")]


class DatasetConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The dataset's name (in lockfiles and reports).
    name: str
    #: The instances: SWE-bench JSON, JSONL or Parquet; relative paths resolve against --config-dir.
    instances: FilePath
    #: The parser family the dataset's test lists were produced by: a SWE-bench
    #: dataset needs the swebench-compatible parsers, quirks included.
    test_ids: Family
    #: Where each repo's git history comes from, by repo name (the instances' `repo`).
    repos: dict[str, RepoSource] = Field(default_factory=dict)
    #: repo -> version -> spec
    specs: dict[str, dict[str, RepoSpec]] = Field(default_factory=dict)
    #: What a model patch may not change (test infrastructure) and what suspect code means.
    protection: TestProtection = Field(default_factory=TestProtection)
    #: Only these instances; and/or only those whose id matches this regular expression.
    #: Both are part of the config, so the lockfile records the selection.
    instance_ids: list[str] | None = None
    #: A regular expression an instance id must match (searched, not anchored).
    filter: str | None = None

    @field_validator("filter")
    @classmethod
    def _a_regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as error:
                raise ValueError(f"not a regular expression ({error})") from None
        return value

    def load(self) -> list[Sample]:
        """The selected instances, in the file's order."""
        samples = load_samples(Path(self.instances))
        if self.instance_ids is not None:
            known = {sample.instance_id for sample in samples}
            unknown = [i for i in self.instance_ids if i not in known]
            if unknown:
                listed = ", ".join(unknown[:5]) + (" ..." if len(unknown) > 5 else "")
                raise UserError(
                    f"dataset '{self.name}': instance_ids names {len(unknown)} instance(s) "
                    f"not in {self.instances}: {listed}"
                )
            wanted = set(self.instance_ids)
            samples = [sample for sample in samples if sample.instance_id in wanted]
        if self.filter is not None:
            pattern = re.compile(self.filter)
            samples = [sample for sample in samples if pattern.search(sample.instance_id)]
        if not samples:
            raise UserError(f"dataset '{self.name}': the selection holds no instance")
        return samples

    def spec_for(self, sample: Sample) -> RepoSpec:
        try:
            return self.specs[sample.repo][sample.version]
        except KeyError:
            raise UserError(
                f"dataset '{self.name}': no spec for repo '{sample.repo}' version "
                f"'{sample.version}' (instance '{sample.instance_id}')"
            ) from None

    def parser_for(self, sample: Sample) -> LogParser:
        """The instance's own parser, else its spec's; its family must be the dataset's."""
        parser = get_parser(sample.parser or self.spec_for(sample).parser)
        if parser.family is not self.test_ids:
            raise UserError(
                f"dataset '{self.name}': instance '{sample.instance_id}' uses parser "
                f"'{parser.name}' ({parser.family} family) but the dataset's test ids "
                f"come from the {self.test_ids} family"
            )
        return parser

    def test_spec(self, sample: Sample) -> TestSpec:
        parser = self.parser_for(sample)
        return compile_test_spec(
            sample,
            self.spec_for(sample),
            parser=parser.name,
            fail_only=parser.fail_only or sample.fail_only,
            protection=self.protection,
        )
