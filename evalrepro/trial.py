"""Trial and Attempt.

A Trial is one pre-declared experiment: an instance x a target (x a sample index). Its
id is sha256 over the canonical JSON of everything that defines it, so two runs agree
on a trial id only if they ran the same test spec in the same image under the same
harness. An Attempt is one infrastructure execution of a trial; retries add attempts,
never trials.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from evalrepro.artifact import Artifact
from evalrepro.digest import sha256_json
from evalrepro.observation import Observation
from evalrepro.record import Record
from evalrepro.score import Score


class TrialKey(BaseModel):
    """The components of a trial id, stored beside it so a reader can recompute it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    instance_id: str
    target_id: str
    repository_commit: str
    image_digest: str
    test_spec_digest: str
    harness_version: str
    #: ``evalrepro.harness.code_digest()``: the code that can change a result.
    harness_digest: str
    sample_index: int = Field(default=0, ge=0)

    def trial_id(self) -> str:
        return sha256_json(self.model_dump(mode="json"))


class Trial(Record):
    record: Literal["Trial"] = "Trial"
    #: 2: the key holds the harness code digest.
    schema_version: int = 2
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


class Attempt(Record):
    record: Literal["Attempt"] = "Attempt"
    trial_id: str
    number: int = Field(ge=1)
    #: Why this attempt ran: "planned" for the first, the infrastructure error otherwise.
    reason: str = "planned"
    started_at: datetime
    finished_at: datetime
    artifacts: list[Artifact]
    observation: Observation
    score: Score
