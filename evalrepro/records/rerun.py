"""Re-runs of failing tests (``environment.rerun_failed``): after a trial's run, each
listed test that failed is run again alone, in a fresh process, up to N times, in the same
sandbox; one that passes is flaky. Planned and judged by ``evalrepro.grade.rerun``, carried
out by the supervisor, scored by ``evalrepro.grade.score``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from evalrepro.records.fresh import FreshOutcome, FreshRun

#: How a flaky test counts: as failed (the default: a test that fails in the run is not
#: fixed because it passed once alone), or as passed (the user's policy allows it).
FlakyCounts = Literal["failed", "passed"]
#: Which failing tests are re-run: "listed", the failing FAIL_TO_PASS / PASS_TO_PASS
#: tests (an evaluation); "failing", every test the log calls failing (dataset
#: validation, which has no lists yet).
RerunScope = Literal["listed", "failing"]


class RerunPlan(BaseModel):
    """What the program asks: which tests may be re-run, how often, and how the host picks
    the failing ones from the run's log (it parses the log; the supervisor does not)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Re-runs of each failing test at most; the first that passes ends them.
    times: int
    scope: RerunScope
    #: The parser that reads the run's log (a name of the parser registry).
    parser: str
    #: The parser prints failures only: a listed test it does not name passed.
    fail_only: bool = False
    #: How a runner selects one test (a key of ``evalrepro.grade.fresh.RUNNERS``).
    runner: str
    #: The spec's test command, to which the one test's selector is appended.
    test_command: str
    fail_to_pass: list[str] = []
    pass_to_pass: list[str] = []
    #: A must-fail canary run alone once among the re-runs: a process that exits 0
    #: whatever it runs passes it (None: no canary could be placed, and no re-run is
    #: asked for, see ``note``).
    canary: FreshRun | None = None
    #: How a flaky test counts when the trial is scored.
    flaky_counts_as: FlakyCounts = "failed"


class RerunCheck(BaseModel):
    """One failing test, with how each of its re-runs ended by its runner's rules."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    test: str
    #: "fail_to_pass", "pass_to_pass", or "other" (a test no list names: validation).
    group: Literal["fail_to_pass", "pass_to_pass", "other"]
    #: The re-runs' outcomes in order; empty: it was not re-run (over the bound, or the
    #: sandbox ended first).
    outcomes: list[FreshOutcome] = []

    @property
    def flaky(self) -> bool:
        """It failed in the run and passed alone at least once."""
        return "passed" in self.outcomes

    @property
    def passes(self) -> int:
        return self.outcomes.count("passed")
