"""A run's metrics (inside its report): the resolve rate and its interval, per repository.
Computed by ``evalrepro.report.metrics``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from evalrepro.records.base import Record
from evalrepro.records.stats import Interval


class RepoBreakdown(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    planned: int
    resolved: int
    unresolved: int
    invalid: int
    missing: int
    #: Resolved over the repo's planned trials, with its Wilson interval: per-repo n is
    #: often small, and the interval says how little a repo's rate alone shows.
    rate: Interval

    @property
    def resolved_rate(self) -> float:
        return self.resolved / self.planned if self.planned else 0.0


class RunMetrics(Record):
    record: Literal["RunMetrics"] = "RunMetrics"
    schema_version: int = 2
    experiment: str
    target_id: str
    planned: int
    resolved: int
    unresolved: int
    invalid: int
    missing: int
    resolved_rate: Interval
    unresolved_rate: Interval
    invalid_rate: Interval
    #: Trials whose every artifact exists with its recorded digest, over planned trials
    #: (a trial whose evidence changed still counts in its outcome, not here).
    evidence_completeness: float
    attempts: int
    retried_trials: int
    retry_reasons: dict[str, int]
    #: Final score reasons (failure modes included), over all finished trials.
    reasons: dict[str, int]
    per_repo: dict[str, RepoBreakdown]
    samples: int
    #: pass@k over instances (multi-sample targets only), keyed "pass@k".
    pass_at_k: dict[str, Interval] = {}
    #: Mean per-sample resolve rate with a bootstrap interval over instances.
    sample_rate: Interval | None = None

    def values(self) -> dict[str, float]:
        """The numbers a gate rule can name."""
        values = {
            "planned": float(self.planned),
            "resolved": float(self.resolved),
            "unresolved": float(self.unresolved),
            "invalid": float(self.invalid),
            "resolved_rate": self.resolved_rate.estimate,
            "unresolved_rate": self.unresolved_rate.estimate,
            "invalid_rate": self.invalid_rate.estimate,
            "evidence_completeness": self.evidence_completeness,
        }
        values |= {name: interval.estimate for name, interval in self.pass_at_k.items()}
        return values
