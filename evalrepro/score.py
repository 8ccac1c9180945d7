"""Score: resolved / unresolved / invalid, decided from an Observation alone.

The order of judgement is fixed (../shared/docs/semantics.md): infrastructure, then the
patch, then the log, then the tests. It is written as a table so the order is visible
and cannot drift: the first rule that matches decides.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Literal

from evalrepro.grading import Resolution
from evalrepro.observation import ExecutionStatus, Observation, ParserStatus, PatchStatus
from evalrepro.record import Record


class Outcome(StrEnum):
    RESOLVED = "resolved"
    UNRESOLVED = "unresolved"
    INVALID = "invalid"  # unscorable: infrastructure, timeout or an untrustworthy log


class Score(Record):
    record: Literal["Score"] = "Score"
    outcome: Outcome
    #: A code from JUDGEMENT, or "tests_passed" / "tests_failed".
    reason: str
    detail: str = ""
    resolution: Resolution | None = None


# (reason, outcome, predicate), judged in order.
JUDGEMENT: tuple[tuple[str, Outcome, Callable[[Observation], bool]], ...] = (
    ("infrastructure_error", Outcome.INVALID, lambda o: o.infrastructure_error is not None),
    ("patch_rejected", Outcome.UNRESOLVED, lambda o: o.patch_status is PatchStatus.REJECTED),
    ("patch_invalid", Outcome.UNRESOLVED, lambda o: o.patch_status is PatchStatus.INVALID),
    ("timeout", Outcome.INVALID, lambda o: o.execution_status is ExecutionStatus.TIMEOUT),
    ("not_run", Outcome.INVALID, lambda o: o.execution_status is ExecutionStatus.NOT_RUN),
    ("log_unparseable", Outcome.INVALID, lambda o: o.parser_status is not ParserStatus.OK),
)


def score(observation: Observation) -> Score:
    for reason, outcome, applies in JUDGEMENT:
        if applies(observation):
            detail = observation.infrastructure_error or observation.parser_detail
            return Score(outcome=outcome, reason=reason, detail=detail or "")
    assert observation.tests is not None  # parser_status OK implies a tests report
    resolution = observation.tests.resolution
    if resolution is Resolution.FULL:
        return Score(outcome=Outcome.RESOLVED, reason="tests_passed", resolution=resolution)
    return Score(outcome=Outcome.UNRESOLVED, reason="tests_failed", resolution=resolution)
