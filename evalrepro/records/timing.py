"""Where a run's time went: its image builds (``images/builds.json``, recorded by
``evalrepro.build.buildlog``) and each trial's phases (each attempt carries its own,
``Attempt.phases``); ``evalrepro.report.timing`` sums them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from evalrepro.records.base import Record, unchanged


class ImageBuild(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    layer: str
    tag: str
    seconds: float


class ReusedImage(BaseModel):
    """A layer this run used that was built before it (found ready in the store)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    layer: str
    tag: str
    #: Its build's time as the build recorded it (``LayerBuild``); None: not recorded
    #: (built by another cache, pulled by hand, or a build of an older evalrepro).
    seconds: float | None
    built_at: datetime | None = None


class ImageBuilds(Record):
    """The image layers this run's sessions built, and those they used that were built
    before (found ready, with the build time recorded when they were built)."""

    record: Literal["ImageBuilds"] = "ImageBuilds"
    #: 2: ``reused``.
    schema_version: int = 2
    migrations = {1: unchanged}
    builds: list[ImageBuild] = []
    reused: list[ReusedImage] = []


class LayerBuild(Record):
    """One build of an image layer, kept in the cache (``builds/<key>.build.json``) so
    that a later run that finds the layer ready knows what building it took."""

    record: Literal["LayerBuild"] = "LayerBuild"
    key: str
    layer: str
    tag: str
    seconds: float
    built_at: datetime


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
    #: Layers this run used that were built before it (none of its build time is this
    #: run's): how many, the build time recorded when they were built (None: none of them
    #: has one), and how many have none.
    layers_reused: int = 0
    reused_build_seconds: float | None = None
    reused_unrecorded: int = 0
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
