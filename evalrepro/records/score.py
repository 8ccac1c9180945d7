"""Score: resolved / unresolved / invalid, with the reason. Decided by
``evalrepro.grade.score``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from evalrepro.records.base import Record
from evalrepro.records.observation import (
    Resolution,
)


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
