"""Where a regraded attempt's log came from and by which rules it is read
(``foreign.json``). Reading such a log: ``evalrepro.grade.foreign``.
"""

from __future__ import annotations

from typing import Literal

from evalrepro.records.base import Record


class ForeignLog(Record):
    """Where an attempt's log came from, and how it was read (``foreign.json``)."""

    record: Literal["ForeignLog"] = "ForeignLog"
    instance_id: str
    #: The log's path when it was regraded (for people: nothing reads it again).
    source: str
    parser: str
    rules: Literal["swebench", "strict"]
