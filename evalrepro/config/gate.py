"""Gate: rules on a run's metrics, all of which must hold."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: Metrics a rule may name; ``pass@k`` for any k is accepted too.
METRICS = frozenset(
    {
        "resolved_rate",
        "unresolved_rate",
        "invalid_rate",
        "evidence_completeness",
        "flaky_rate",
        "flaky",
        "resolved",
        "unresolved",
        "invalid",
        "planned",
    }
)
_PASS_AT_K = re.compile(r"^pass@[1-9]\d*$")

Operator = Literal[">=", ">", "<=", "<", "==", "!="]
_OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
    "==": operator.eq,
    "!=": operator.ne,
}


class GateRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: A run metric: resolved_rate, invalid_rate, evidence_completeness, ..., or pass@k.
    metric: str
    #: How the measured value compares with the threshold.
    op: Operator
    #: The value the metric is compared with.
    threshold: float

    @field_validator("metric")
    @classmethod
    def _known_metric(cls, value: str) -> str:
        if value not in METRICS and not _PASS_AT_K.match(value):
            known = ", ".join(sorted(METRICS))
            raise ValueError(f"unknown metric '{value}' (known: {known}, pass@k)")
        return value

    def holds(self, value: float) -> bool:
        return _OPERATORS[self.op](value, self.threshold)

    def __str__(self) -> str:
        return f"{self.metric} {self.op} {self.threshold:g}"


class RuleVerdict(BaseModel):
    model_config = ConfigDict(frozen=True)

    rule: GateRule
    value: float | None
    passed: bool


class Gate(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The gate's name in reports.
    name: str = "gate"
    #: Every rule must hold for the gate to pass.
    rules: list[GateRule] = Field(default_factory=list)

    def evaluate(self, metrics: Mapping[str, float]) -> list[RuleVerdict]:
        """One verdict per rule; a metric the run does not have fails its rule."""
        verdicts = []
        for rule in self.rules:
            value = metrics.get(rule.metric)
            verdicts.append(
                RuleVerdict(rule=rule, value=value, passed=value is not None and rule.holds(value))
            )
        return verdicts
