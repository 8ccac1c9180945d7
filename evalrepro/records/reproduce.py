"""A reproduction of a bundle (``reproduction.json``): which trials agree, and for the
others which tests differ and why it may be. Made by ``evalrepro.publish.reproduce``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from evalrepro.records.base import Record, unchanged

Kind = Literal["harness change", "flaky", "environment drift"]


class TestDisagreement(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    test: str
    #: Its status in the bundle and in the reproduction ("absent": not in the log).
    bundle: str
    reproduction: str
    kind: Kind
    #: The statuses the reruns gave, in order.
    reruns: list[str] = []
    #: The lines of each log that name the test.
    bundle_lines: list[str] = []
    reproduction_lines: list[str] = []


class TrialAgreement(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The trial's folder in the bundle's run (trials/<label>).
    label: str
    instance_id: str
    sample_index: int
    agrees: bool
    bundle_outcome: str
    reproduction_outcome: str
    bundle_resolution: str | None
    reproduction_resolution: str | None
    tests: list[TestDisagreement] = []
    #: For an outcome that differs with no test that does (a timeout, an infrastructure
    #: error): what the reruns say about it.
    kind: Kind | None = None


class Reproduction(Record):
    record: Literal["Reproduction"] = "Reproduction"
    #: 2: whether an agent target's recorded agent phases were replayed.
    schema_version: int = 2
    migrations = {1: unchanged}
    bundle: str
    #: sha256 over the bytes of the bundle's lockfile.
    lockfile_sha256: str
    bundle_harness: str
    reproduction_harness: str
    #: The trials run: all, or a seeded random sample.
    planned: int
    sample: int | None
    seed: int
    reruns: int
    trials: list[TrialAgreement]
    #: An agent target: its agents were not run again; the patches they made, as the
    #: bundle records them, were evaluated again (agents are not deterministic).
    agents_replayed: bool = False

    @property
    def agreeing(self) -> int:
        return sum(trial.agrees for trial in self.trials)
