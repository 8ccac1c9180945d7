"""A run's metrics (inside its report): the resolve rate and its interval, per repository.
Computed by ``evalrepro.report.metrics``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from evalrepro.records.base import Record, unchanged
from evalrepro.records.score import Outcome
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


def _from_2(data: dict[str, Any]) -> dict[str, Any]:
    """Schema 2 did not record which instances pass@k is over: ``instances`` stays None
    and ``pass_at_k_instances`` empty, read as "not recorded", never as "all of them"."""
    return data


class RunMetrics(Record):
    record: Literal["RunMetrics"] = "RunMetrics"
    #: 3: ``instances`` and ``pass_at_k_instances`` (which instances each pass@k is over);
    #: 4: the flaky trials (``flaky``, ``flaky_rate``, ``flaky_tests``);
    #: 5: ``pass_hat_k`` (pass^k beside pass@k; an older record reads with none);
    #: 6: ``reason_outcomes`` (an older record reads with none: not recorded).
    schema_version: int = 6
    migrations = {2: _from_2, 3: unchanged, 4: unchanged, 5: unchanged}
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
    #: The outcome the grading gave each of those reasons (a reason decides one outcome:
    #: its row of the judgement table), so that a chart of failure modes colours them
    #: without consulting the grading. Empty: a record of schema 5 or older.
    reason_outcomes: dict[str, Outcome] = {}
    per_repo: dict[str, RepoBreakdown]
    samples: int
    #: Instances with at least one planned trial (None: a record of schema 2).
    instances: int | None = None
    #: pass@k over instances (multi-sample targets only), keyed "pass@k": the mean over
    #: the instances with at least k planned samples (``pass_at_k_instances``), only for
    #: a k that at least one instance has.
    pass_at_k: dict[str, Interval] = {}
    #: For every k the target's samples call for ("pass@k"), how many instances its mean
    #: is over: those with at least k planned samples (``target.missing: skip`` can plan
    #: fewer than ``samples``). 0: no instance has k samples, so pass@k is not available
    #: and is not in ``pass_at_k``. Empty: not recorded (schema 2) or a one-sample target.
    pass_at_k_instances: dict[str, int] = {}
    #: pass^k (all k samples resolve: per instance C(c, k)/C(n, k)), keyed "pass^k", for
    #: each k > 1 that ``pass_at_k`` has, over the same instances (``pass_at_k_instances``
    #: of "pass@k") and with the same bootstrap over instances. pass^1 is pass@1, so it is
    #: not repeated. None: not computed (a one-sample target, or a record of schema 4 or
    #: older); empty: no instance has 2 samples (each pass^k is then "not available").
    pass_hat_k: dict[str, Interval] | None = None
    #: Mean per-sample resolve rate with a bootstrap interval over instances.
    sample_rate: Interval | None = None
    #: Trials with a flaky test (one that failed in the run and passed when re-run alone,
    #: ``environment.rerun_failed``), and the flaky tests over them all.
    flaky: int = 0
    flaky_tests: int = 0
    #: ``flaky`` over planned trials; None: no trial re-ran its failing tests, so
    #: flakiness was not measured (a gate rule on it fails).
    flaky_rate: Interval | None = None

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
        if self.flaky_rate is not None:  # measured: the run re-ran its failing tests
            values |= {"flaky": float(self.flaky), "flaky_rate": self.flaky_rate.estimate}
        values |= {name: interval.estimate for name, interval in self.pass_at_k.items()}
        return values

    def pass_at_k_rows(self) -> list[tuple[str, Interval | None, str]]:
        """Each pass@k the record holds or says is not available, in k order, each pass^k
        right after its pass@k: its name, its interval (None: not available) and what a
        reader must be told of the instances it is over ("" when it is over every
        instance, or not recorded)."""
        rows = []
        for name in list(self.pass_at_k_instances) or list(self.pass_at_k):
            rows.append((name, self.pass_at_k.get(name), self.pass_at_k_coverage(name)))
            hat = name.replace("pass@", "pass^", 1)
            if self.pass_hat_k is not None and name != "pass@1":
                rows.append((hat, self.pass_hat_k.get(hat), self.pass_at_k_coverage(hat)))
        return rows

    def pass_at_k_coverage(self, name: str) -> str:
        """How many instances ``name`` ("pass@k" or "pass^k") is over, when that is not
        all of them: "over 3 of 4 instances, those with at least 2 samples", or "not
        available: no instance has 2 samples"; "" when it is over every instance (or not
        recorded)."""
        k = name.removeprefix("pass@").removeprefix("pass^")
        over = self.pass_at_k_instances.get(f"pass@{k}")
        if over is None or self.instances is None:
            return ""
        held = (self.pass_hat_k or {}) if name.startswith("pass^") else self.pass_at_k
        if over == 0 or name not in held:
            return f"not available: no instance has {k} samples"
        if over == self.instances:
            return ""
        return f"over {over} of {self.instances} instances, those with at least {k} samples"
