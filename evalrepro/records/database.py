"""What the team database answers (``evalrepro runs --json``, ``evalrepro leaderboard
--json``): read from its rows by ``evalrepro.database.queries``, each rate the run's own
recorded RunMetrics interval."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from evalrepro.records.base import Record, unchanged
from evalrepro.records.lockfile import Difference
from evalrepro.records.stats import Interval


class PublishedRun(BaseModel):
    """One run as the database holds it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str
    experiment: str
    target_id: str
    dataset: str
    lockfile_digest: str
    comparability: str
    harness_version: str
    started_at: datetime | None
    finished_at: datetime | None
    published_at: datetime
    planned: int
    #: Trials with a result; fewer than planned: the run did not finish (yet).
    finished: int
    resolved: int
    resolved_rate: Interval
    gate_name: str
    gate_passed: bool
    #: Every file is in the store and every row in the database.
    complete: bool
    store_url: str
    #: When ``evalrepro unpublish`` retracted it, and why: kept, off the leaderboard.
    retracted_at: datetime | None = None
    retraction_reason: str | None = None


class PublishedRuns(Record):
    record: Literal["PublishedRuns"] = "PublishedRuns"
    #: 2: a run's retraction (optional fields: a version 1 file reads as it is).
    schema_version: int = 2
    migrations: ClassVar[dict[int, Callable[[dict[str, Any]], dict[str, Any]]]] = {1: unchanged}
    database: str
    runs: list[PublishedRun]


class LeaderboardRow(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rank: int
    run_id: str
    experiment: str
    target_id: str
    planned: int
    resolved: int
    resolved_rate: Interval
    invalid_rate: Interval
    pass_at_k: dict[str, Interval] = {}
    #: pass^k (all k samples resolve) for each k > 1 of ``pass_at_k``, from the run's own
    #: recorded metrics (empty: one sample, or metrics of schema 4 or older).
    pass_hat_k: dict[str, Interval] = {}
    gate_passed: bool
    started_at: datetime | None


class LeaderboardGroup(BaseModel):
    """Runs that ``verify`` calls comparable (one comparability class), best first."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    comparability: str
    dataset: str
    instances: int
    harness_version: str
    rows: list[LeaderboardRow]
    #: How this group differs from the first (empty for the first): ``verify A B``'s
    #: differences between their lockfiles, the targets left out.
    differences: list[Difference] = []
    #: What makes this class, as its heading names it: its own value of each thing the
    #: board's classes do not share (``comparability.defining_facts``; empty when the
    #: board has one class).
    defined_by: list[str] = []


class Leaderboard(Record):
    record: Literal["Leaderboard"] = "Leaderboard"
    #: 2: each group's ``defined_by``; 3: each row's ``pass_hat_k``.
    schema_version: int = 3
    migrations = {1: unchanged, 2: unchanged}
    database: str
    dataset: str | None
    groups: list[LeaderboardGroup]
    #: Runs left out: not complete in the store, or not finished.
    left_out: list[str] = []
