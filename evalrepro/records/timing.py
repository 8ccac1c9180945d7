"""Where a run's time went: its image builds (``images/builds.json``) and each trial's
phases. Measured by ``evalrepro.report.timing``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from evalrepro.records.base import Record


class ImageBuild(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    layer: str
    tag: str
    seconds: float


class ImageBuilds(Record):
    """The image layers this run's sessions built (a layer found ready is not listed)."""

    record: Literal["ImageBuilds"] = "ImageBuilds"
    builds: list[ImageBuild] = []


class PhaseSeconds(BaseModel):
    """Seconds spent, by phase, summed over attempts (0 where a phase did not run)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Host wall time of the attempts, start to finish.
    wall: float = 0.0
    #: The container's whole life (podman run), host-measured.
    container: float = 0.0
    #: Applying the model patch (the supervisor's clock).
    patch: float = 0.0
    #: Writing and verifying the test files.
    reset: float = 0.0
    #: The test command.
    tests: float = 0.0
    #: An agent target's agent phase, start to its sandbox's end (``agent.json``).
    agent: float = 0.0

    def __add__(self, other: PhaseSeconds) -> PhaseSeconds:
        names = PhaseSeconds.model_fields
        return PhaseSeconds(**{name: getattr(self, name) + getattr(other, name) for name in names})


class TrialTiming(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    attempts: int
    seconds: PhaseSeconds
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None


class RunTiming(BaseModel):
    """A run's time and cost in total."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    trials: int
    attempts: int
    retried_trials: int
    #: Summed over every attempt of every finished trial.
    seconds: PhaseSeconds
    #: Image layers built by this run's sessions, and their build time by layer kind.
    layers_built: int
    build_seconds: dict[str, float]
    #: When the first session started and the last trial finished (None: no trial yet).
    started_at: datetime | None
    finished_at: datetime | None
    #: Totals over the trials whose target reported them; None when none did.
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None

    @property
    def build_total(self) -> float:
        return sum(self.build_seconds.values())
