"""What an executor is: it schedules the attempts of a run's trials, and owns retries.

``run(jobs, events)`` drives every :class:`~evalrepro.run.execute.TrialJob` to its end:
it asks each job for attempt specs, has a runtime turn each into an output (in this
process, or on another machine: a spec and an output are values), hands every output
back to its job on the host, which records it and says whether another attempt follows,
and reports each finished trial through ``events``. It returns the finished trials'
results; a trial it never started stays missing (a resume runs it). The executor is not
part of a trial's identity.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Protocol

from evalrepro.plan.trial import PlannedTrial
from evalrepro.records.trial import TrialResult
from evalrepro.run import agent_phase
from evalrepro.run.execute import TrialJob, now
from evalrepro.runtimes.base import Runtime


class Events(Protocol):
    """What an executor tells as it goes (live progress)."""

    def attempt_started(self, planned: PlannedTrial, number: int) -> None: ...

    def trial_finished(self, planned: PlannedTrial, result: TrialResult) -> None: ...

    def workers_changed(self, summary: str) -> None:
        """The executor's workers as one line (which run what, which were refused or
        lost), when it changes; an executor without workers of its own never calls it."""


class Executor(ABC):
    kind: ClassVar[str]

    def __init__(
        self, config: object, runtime: Runtime, dataset: object = None, started: Any = None
    ) -> None:
        self.config = config
        self.runtime = runtime
        #: The dataset config the trials come from (None: not known to this executor).
        self.dataset = dataset
        #: What :meth:`starting` began while the plan was made (None: nothing).
        self.started = started

    @classmethod
    def starting(cls, config: Any, environment: Any) -> contextlib.AbstractContextManager[Any]:
        """What this kind starts before it takes attempts (a cluster, its workers'
        runtimes for ``environment``), begun while the plan is made and given to the
        executor as ``started``; it ends with the run."""
        return contextlib.nullcontext()

    @abstractmethod
    def run(self, jobs: list[TrialJob], events: Events) -> list[TrialResult]: ...

    def drive(self, job: TrialJob, events: Events) -> TrialResult:
        """One trial, attempt after attempt, in the calling thread."""
        while (spec := job.next_spec()) is not None:
            events.attempt_started(job.planned, spec.number)
            started = now()
            job.record(spec, agent_phase.attempt(self.runtime, spec), started)
        result = job.finish()
        events.trial_finished(job.planned, result)
        return result
