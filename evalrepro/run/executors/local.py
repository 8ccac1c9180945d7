"""The local executor: a pool of threads in this process, each driving one trial.

Each thread waits on its sandbox (a podman process) most of the time; the recording of
each attempt happens in that thread, on this host, the run directory's only writer.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import ClassVar

from evalrepro.config.executor import LocalExecutorConfig
from evalrepro.plan.trial import PlannedTrial
from evalrepro.records.trial import TrialResult
from evalrepro.run.execute import TrialJob
from evalrepro.run.executors.base import Events, Executor
from evalrepro.runtimes.base import Runtime


class LocalExecutor(Executor):
    kind: ClassVar[str] = "local"

    def __init__(
        self,
        config: LocalExecutorConfig,
        runtime: Runtime,
        dataset: object = None,
        started: object = None,
    ) -> None:
        super().__init__(config, runtime, dataset, started)
        self.max_workers = config.max_workers
        self._lock = threading.Lock()

    def run(self, jobs: list[TrialJob], events: Events) -> list[TrialResult]:
        serialized = _Serialized(events, self._lock)
        pool = ThreadPoolExecutor(max_workers=self.max_workers)
        try:
            # list() re-raises the first exception of any worker.
            return list(pool.map(lambda job: self.drive(job, serialized), jobs))
        finally:
            # On Ctrl-C or an error, trials not yet started stay unstarted (a resume runs
            # them); without cancel_futures, shutdown would run every one of them first.
            pool.shutdown(wait=True, cancel_futures=True)


class _Serialized:
    """Events told one at a time (a progress display is not thread-safe)."""

    def __init__(self, events: Events, lock: threading.Lock) -> None:
        self.events = events
        self.lock = lock

    def attempt_started(self, planned: PlannedTrial, number: int) -> None:
        with self.lock:
            self.events.attempt_started(planned, number)

    def trial_finished(self, planned: PlannedTrial, result: TrialResult) -> None:
        with self.lock:
            self.events.trial_finished(planned, result)
