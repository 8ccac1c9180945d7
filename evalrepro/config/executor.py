"""Executor: who schedules a run's attempts, where, and with which retries.

One pydantic config per kind (``executor.kind``, a plugin of the ``evalrepro.executors``
group); the model names its implementation, imported only when a run opens it. The
executor is not part of a trial's identity: the same lockfile run by two executors gives
the same trial ids and verdicts.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field


class _ExecutorBase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Attempts per trial when the infrastructure fails; the plan's trial count is fixed.
    max_attempts: int = Field(default=2, ge=1, le=10)

    #: The implementation, ``module:class``, imported when a run opens the executor.
    implementation: ClassVar[str]

    @property
    def concurrency(self) -> int:
        """Attempts that may run at once (also independent image layers built at once)."""
        return 1


class LocalExecutorConfig(_ExecutorBase):
    """A pool of threads in this process, each driving one sandbox at a time."""

    kind: Literal["local"] = "local"
    #: Trials run at once (and independent image layers built at once).
    max_workers: int = Field(default=2, ge=1)

    implementation: ClassVar[str] = "evalrepro.run.executors.local:LocalExecutor"

    @property
    def concurrency(self) -> int:
        return self.max_workers


class SerialExecutorConfig(_ExecutorBase):
    """One attempt at a time, in the calling thread."""

    kind: Literal["serial"] = "serial"

    implementation: ClassVar[str] = "evalrepro.run.executors.serial:SerialExecutor"
