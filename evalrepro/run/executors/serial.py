"""The serial executor: one trial at a time, in the calling thread."""

from __future__ import annotations

from typing import ClassVar

from evalrepro.records.trial import TrialResult
from evalrepro.run.execute import TrialJob
from evalrepro.run.executors.base import Events, Executor


class SerialExecutor(Executor):
    kind: ClassVar[str] = "serial"

    def run(self, jobs: list[TrialJob], events: Events) -> list[TrialResult]:
        return [self.drive(job, events) for job in jobs]
