"""Dataset: where task instances come from, and the per-(repo, version) specs they run with.

A dataset is configuration (``conf/dataset/*.yaml``): the instances file, which parser
family its FAIL_TO_PASS / PASS_TO_PASS lists were produced by, where each repo's git
history comes from, and a spec per (repo, version). A user evaluates their own data by
writing such a file; no Python is needed.

Models only: compiling the dataset into test specs and parsers is the plan's
(``evalrepro.plan.dataset``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, FilePath, field_validator

from evalrepro.config.protection import TestProtection
from evalrepro.config.spec import RepoSpec
from evalrepro.errors import UserError
from evalrepro.sample import Family, Sample, load_samples
from evalrepro.sources.config import SourceConfig, Sources


class DatasetConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The dataset's name (in lockfiles and reports).
    name: str
    #: The instances: SWE-bench JSON, JSONL or Parquet; relative paths resolve against --config-dir.
    instances: FilePath
    #: The parser family the dataset's test lists were produced by: a SWE-bench
    #: dataset needs the swebench-compatible parsers, quirks included.
    test_ids: Family
    #: Where each repo's history is, by repo name (the instances' `repo`): one source, or a
    #: list of them searched in order (the first whose history has the base commit serves).
    repos: dict[str, Sources] = Field(default_factory=dict)
    #: Where an instance's history is, by instance id, instead of its repo's: one source or
    #: a list, as under `repos`.
    instance_repos: dict[str, Sources] = Field(default_factory=dict)
    #: repo -> version -> spec
    specs: dict[str, dict[str, RepoSpec]] = Field(default_factory=dict)
    #: What a model patch may not change (test infrastructure) and what suspect code means.
    protection: TestProtection = Field(default_factory=TestProtection)
    #: Only these instances; and/or only those whose id matches this regular expression.
    #: Both are part of the config, so the lockfile records the selection.
    instance_ids: list[str] | None = None
    #: A regular expression an instance id must match (searched, not anchored).
    filter: str | None = None

    #: The instances are compared by digest, their histories through base commits and
    #: image digests; the specs through the TestSpecs they give (and named beside them).
    identity: ClassVar[dict[str, str]] = {
        "instances": "digest",
        "repos": "digest",
        "instance_repos": "digest",
        "specs": "test_spec",
    }

    @field_validator("filter")
    @classmethod
    def _a_regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as error:
                raise ValueError(f"not a regular expression ({error})") from None
        return value

    def sources(self) -> SourceConfig:
        """Where the instances' histories are: ``repos`` and ``instance_repos``."""
        return SourceConfig(repos=self.repos, instance_repos=self.instance_repos)

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
