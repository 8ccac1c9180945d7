"""A comparison of runs (``evalrepro compare --json``): the pairs, their intervals and tests, and
each instance's outcomes. Computed by ``evalrepro.report.compare``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from evalrepro.records.base import Record
from evalrepro.records.lockfile import Difference
from evalrepro.records.report import Provenance
from evalrepro.records.stats import Comparison

#: How trials that did not resolve enter every paired difference; said with each verdict.
COUNTING = (
    "invalid and missing trials count as unresolved (failures) in the paired difference, "
    "as in each run's resolve rate"
)


def run_label(experiment: str, target_id: str) -> str:
    """A run as reports name it: "experiment (target)", or the one name when the two are
    the same (the demo's "model_a", not "model_a (model_a)")."""
    return experiment if experiment == target_id else f"{experiment} ({target_id})"


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
    #: What each shared instance contributes to ``resolved``, in words every output
    #: prints: its one trial (0/1), or its share of resolved samples when either run has
    #: several samples of an instance.
    paired: str
    #: How invalid and missing trials count in the paired difference (``COUNTING``).
    counting: str = COUNTING
    #: The most samples an instance has in A and in B (1: one trial per instance; None:
    #: not recorded, a schema 2 comparison).
    samples_a: int | None
    samples_b: int | None
    #: Shared instances whose value (0/1, or share of resolved samples) is higher in A,
    #: and in B: the discordant instances, as the per-instance table flags them (None:
    #: not recorded).
    a_higher: int | None
    b_higher: int | None
    resolved: Comparison
    #: Several samples: "pass@k" and "pass^k" (each k > 1 both runs have) and
    #: "sample_rate" comparisons over instances; "pass@1" and "sample_rate" are
    #: ``resolved`` again.
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
    #: Resolved in one run but not in the first (several samples: the shares of resolved
    #: samples differ, so 1 of 1 and 2 of 2 agree).
    discordant: bool
    #: One cell per run, in the order compared; None when the run lacks the instance.
    runs: list[RunCell | None]


def _pairs_say_what_they_paired(data: dict[str, Any]) -> dict[str, Any]:
    """2 -> 3: schema 2 recorded no ``paired``; a run of one sample against one of several
    then paired sample 0 only, and the discordance flags compared resolved counts."""
    pairs = data.get("pairs")
    if isinstance(pairs, list):
        data["pairs"] = [_pair_of_2(pair) if isinstance(pair, dict) else pair for pair in pairs]
    return data


def _pair_of_2(pair: dict[str, Any]) -> dict[str, Any]:
    resolved = pair.get("resolved")
    test = resolved.get("mcnemar") if isinstance(resolved, dict) else None
    counts = test if isinstance(test, dict) else {}
    return {
        "paired": "not recorded (a schema 2 comparison)",
        "samples_a": None,
        "samples_b": None,
        # McNemar's discordant pairs are the discordant instances of 0/1 outcomes.
        "a_higher": counts.get("a_only"),
        "b_higher": counts.get("b_only"),
        **pair,
    }


class ComparisonReport(Record):
    record: Literal["ComparisonReport"] = "ComparisonReport"
    #: 2: intervals and verdicts at ``comparison_confidence`` (corrected for several pairs).
    #: 3: each pair says what it paired and how invalid trials count; with several samples
    #: in either run, each instance's share of resolved samples is paired.
    schema_version: int = 3
    migrations = {2: _pairs_say_what_they_paired}
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
