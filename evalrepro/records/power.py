"""A power analysis of a paired comparison (``evalrepro compare --power --json``): how many
instances the verdict's test needs to detect a difference, and what a run pair of n
instances can detect. Computed by ``evalrepro.report.power``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from evalrepro.records.base import Record


class PilotEstimate(BaseModel):
    """The discordance of two runs, read as a pilot: an estimate with its uncertainty."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    a: str
    b: str
    n: int
    #: Instances resolved by A only, by B only.
    a_only: int
    b_only: int
    #: Wilson interval of the discordance rate (a_only + b_only) / n at ``confidence``.
    discordance_low: float
    discordance_high: float
    confidence: float


class PowerAnalysis(Record):
    record: Literal["PowerAnalysis"] = "PowerAnalysis"
    schema_version: int = 1
    #: "runs": the rates and discordance of two runs (a pilot); "stated": given numbers.
    source: Literal["runs", "stated"]
    #: The test the verdict uses, two-sided at ``alpha`` (= 1 - compare's confidence).
    test: str
    alpha: float
    target_power: float
    #: The rates of A and B (None: not stated, ``--power-discordant``), and the
    #: per-instance probabilities planned for: A only (p10), B only (p01).
    p_a: float | None
    p_b: float | None
    p10: float
    p01: float
    #: The difference (B - A) planned for, and where it came from: the runs
    #: ("observed"), the stated rates or discordant shares ("design"), or
    #: ``--power-difference`` ("stated").
    difference: float
    difference_from: Literal["observed", "design", "stated"]
    #: Instances of the current runs (or --power-n); None: no n given.
    n: int | None
    #: The power n instances have to detect ``difference`` (None: no n).
    power_at_n: float | None
    #: Smallest |B - A| detectable at ``target_power`` with n instances and this
    #: discordance (p10 + p01 held); None: no n, or not even B - A = the discordance.
    detectable_difference: float | None
    #: Smallest n from which the power reaches the target for every n up to
    #: ``stable_until`` (exact power is not monotone in n); None: above ``max_n``.
    required_n: int | None
    stable_until: int | None
    #: The smallest n with the target power (a larger n may dip below it again).
    first_n: int | None
    max_n: int
    #: Connor's (1987) normal approximation of the n needed, for comparison.
    normal_n: float | None
    pilot: PilotEstimate | None = None
    #: required_n at the ends of the pilot's discordance interval (difference held; None:
    #: that discordance cannot hold the difference, or above ``max_n``).
    required_n_at_discordance_low: int | None = None
    required_n_at_discordance_high: int | None = None
    #: What the numbers assume, in words every output prints.
    notes: list[str] = []
