"""A comparison of runs (``evalrepro compare --json``): the pairs, their intervals and tests, and
each instance's outcomes. Computed by ``evalrepro.report.compare``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from evalrepro.records.base import Record
from evalrepro.records.lockfile import Difference
from evalrepro.records.report import Provenance
from evalrepro.records.stats import Comparison


class PairComparison(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    a: str
    b: str
    a_path: str
    b_path: str
    comparable: bool
    differences: list[Difference]
    #: Instances in both runs (the paired sample); those only in one are left out.
    shared_instances: int
    missing_trials: int
    resolved: Comparison
    #: Multi-sample targets: "pass@k" and "sample_rate" comparisons over instances.
    by_k: dict[str, Comparison] = {}


class RunCell(BaseModel):
    """One instance in one run: its trials' outcome (sample 0's reason and folder)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: resolved / unresolved / invalid / missing (single sample), or "k/n resolved".
    outcome: str
    resolved: int
    samples: int
    reason: str
    attempts: int
    #: Wall seconds over the instance's trials and attempts (None: nothing ran).
    seconds: float | None
    #: The first sample's trial folder, relative to its run directory.
    folder: str


class InstanceOutcomes(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    instance_id: str
    repo: str
    #: Resolved in one run but not in the first (any sample, for multi-sample targets:
    #: the resolved-sample counts differ).
    discordant: bool
    #: One cell per run, in the order compared; None when the run lacks the instance.
    runs: list[RunCell | None]


class ComparisonReport(Record):
    record: Literal["ComparisonReport"] = "ComparisonReport"
    #: 2: intervals and verdicts at ``comparison_confidence`` (corrected for several pairs).
    schema_version: int = 2
    #: Family-wise level (--confidence): all the pairs' intervals hold together at it.
    confidence: float
    #: The level of each pair's intervals, tests and verdict.
    comparison_confidence: float
    correction: Literal["none", "Bonferroni"]
    n_resamples: int
    seed: int
    #: Bootstrap method for per-instance rates; 0/1 outcomes always get Tango's interval.
    method: str
    pairs: list[PairComparison]
    #: Said when more than one pair is compared: what the correction did.
    multiple_comparisons_note: str | None = None
    #: Where each run's numbers come from, in the order compared (the first is A).
    runs: list[Provenance] = []
    #: Each instance's outcome in each run, discordant instances first.
    instances: list[InstanceOutcomes] = []
