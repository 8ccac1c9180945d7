"""What a regrade found (``regrade.json``): where evalrepro's verdict differs from the one
the logs' own harness wrote. Made by ``evalrepro.regrade``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from evalrepro.records.base import Record, unchanged


class RegradeDifference(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    instance_id: str
    #: Our verdict in swebench's terms (the list our SWE-bench layout puts the instance
    #: in: resolved / unresolved / error / empty patch), then our outcome and reason.
    ours: str
    #: What swebench's report.json beside the log says.
    theirs: str


class RegradeSummary(Record):
    record: Literal["RegradeSummary"] = "RegradeSummary"
    #: 2: ``no_patch``.
    schema_version: int = 2
    migrations = {1: unchanged}
    logs: str
    dataset: str
    model: str
    run_id: str
    graded: int
    resolved: int
    #: Instances whose folder held a report.json of swebench's.
    compared: int
    differences: list[RegradeDifference]
    #: Instances whose folder kept no patch.diff: graded from the log, the patch unknown
    #: (never an empty patch: swebench writes no log for one).
    no_patch: list[str] = []
