"""Trial and Attempt.

A Trial is one pre-declared experiment: an instance x a target (x a sample index). Its
id is sha256 over the canonical JSON of everything that defines it, so two runs agree
on a trial id only if they ran the same test spec in the same image under the same
harness, for the same target. An Attempt is one infrastructure execution of a trial;
retries add attempts, never trials. A TrialResult is a trial's outcome: the source of
truth every report is computed from.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from evalrepro.digest import sha256_json
from evalrepro.records.artifact import Artifact
from evalrepro.records.base import Record, read_record, unchanged
from evalrepro.records.observation import Observation
from evalrepro.records.score import Score
from evalrepro.records.timing import PhaseSeconds
from evalrepro.records.usage import Usage
from evalrepro.text import InstanceId


class TrialKey(BaseModel):
    """The components of a trial id, stored beside it so a reader can recompute it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    instance_id: InstanceId
    target_id: str
    repository_commit: str
    image_digest: str
    test_spec_digest: str
    harness_version: str
    #: ``evalrepro.plan.harness.code_digest()``: the code that can change a result (with
    #: the kinds of other packages the trial uses: ``evalrepro.plan.plugin_code``).
    harness_digest: str
    sample_index: int = Field(default=0, ge=0)
    #: What defines the target's answer in this trial (the target's ``identity``): a
    #: saved patch's sha256, an agent's configuration digest. None in trials recorded
    #: before keys held it: their ids are what they were.
    target_digest: str | None = None

    def trial_id(self) -> str:
        """sha256 over the canonical JSON of the key (fields that are None left out)."""
        return sha256_json(self.model_dump(mode="json", exclude_none=True))


class Trial(Record):
    record: Literal["Trial"] = "Trial"
    #: 2: the key holds the harness code digest; 3: and the target's digest.
    schema_version: int = 3
    migrations = {2: unchanged}
    trial_id: str
    key: TrialKey

    @classmethod
    def of(cls, key: TrialKey) -> Trial:
        return cls(trial_id=key.trial_id(), key=key)

    @property
    def label(self) -> str:
        return trial_label(self.key.instance_id, self.key.sample_index, self.trial_id)


def trial_label(instance_id: str, sample_index: int, trial_id: str) -> str:
    """A trial's folder name: readable, and unique by the id's first digits."""
    return f"{instance_id}--s{sample_index}--{trial_id.removeprefix('sha256:')[:12]}"


class Lease(BaseModel):
    """Where an attempt ran when an executor sent it to another process (a Dask worker):
    the worker, when it was first seen at the attempt, and the last time the scheduler
    saw it still at work. ``lost``: the worker died or disappeared with it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    worker: str
    host: str = ""
    started_at: datetime
    last_heartbeat: datetime
    lost: bool = False


class Attempt(Record):
    record: Literal["Attempt"] = "Attempt"
    #: 2: the lease of an attempt run by another process; 3: its own phase times.
    schema_version: int = 3
    migrations = {1: unchanged, 2: unchanged}
    trial_id: str
    number: int = Field(ge=1)
    #: Why this attempt ran: "planned" for the first, the infrastructure error otherwise.
    reason: str = "planned"
    started_at: datetime
    finished_at: datetime
    artifacts: list[Artifact]
    observation: Observation
    score: Score
    lease: Lease | None = None
    #: Where the attempt's time went, measured where its evidence was read (None: an
    #: attempt recorded before schema 3; its report's clocks are in ``supervisor.json``).
    phases: PhaseSeconds | None = None


class TrialResult(Record):
    """The outcome of one trial: its final score and every attempt it took."""

    record: Literal["TrialResult"] = "TrialResult"
    #: 3: the trial key holds the harness code digest; 4: and the target's digest.
    schema_version: int = 4
    migrations = {3: unchanged}
    trial: Trial
    instance_id: str
    target_id: str
    sample_index: int
    score: Score
    attempts: list[Attempt]
    #: How the host enforced each resource limit in the final attempt ({} if not run).
    limits: dict[str, str]
    #: What the target reported producing the patch cost (tokens, money), if anything.
    usage: Usage | None = None


#: Largest trial result read (a result with thousands of tests is a few MB).
MAX_RESULT_BYTES = 64 << 20


def read_trial_result(path: Path) -> TrialResult:
    return read_record(path, TrialResult, limit=MAX_RESULT_BYTES)


def outcome_counts(results: Iterable[TrialResult]) -> Counter[str]:
    """How many results have each outcome (resolved, unresolved, invalid): the one count
    behind ``results.json`` and the run's metrics."""
    return Counter(str(result.score.outcome) for result in results)
