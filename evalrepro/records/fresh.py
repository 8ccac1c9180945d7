"""Fresh runs: a test run alone in a fresh process after a trial's run, judged by the
exit status the supervisor reads from outside it. Planned by ``evalrepro.grade.fresh``,
carried out by the supervisor, judged by ``evalrepro.grade.score``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class FreshRun(BaseModel):
    """One fresh run as the program carries it to the supervisor."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The test it runs: a FAIL_TO_PASS test (its status-map key) or a canary's name.
    test: str
    #: "pass": a FAIL_TO_PASS test, which the run's log says passed only if it passes
    #: here too; "fail": a must-fail canary, whose run must exit with a failure.
    expect: Literal["pass", "fail"]
    #: The shell command: the spec's test command with only this test selected.
    command: str
    #: How the runner's exit status reads (a key of ``evalrepro.grade.fresh.RUNNERS``).
    runner: str


class FreshResult(BaseModel):
    """How one fresh run ended, as the supervisor saw it from outside the process."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    test: str
    exit_code: int | None
    signal: int | None
    seconds: float
    #: The limit that stopped it ("timeout", "memory", ...), if one did.
    stopped: str | None = None
    #: The exit guard's view of the runner's end: "abnormal" = no normal shutdown.
    runner_exit: Literal["clean", "abnormal", "unknown"]
    #: The run's runner (its ``FreshRun.runner``); "" in reports of older supervisors.
    runner: str = ""


#: What a fresh run's exit status says, read by its runner's rules. No judgement comes of
#: "unselected" (the runner found no such test: a status-map key it cannot select by) or
#: "not_run" (the sandbox ended first).
FreshOutcome = Literal["passed", "failed", "unselected", "stopped", "abnormal", "not_run"]


class FreshCheck(BaseModel):
    """One fresh run, judged against what the trial's log said of the same test."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    test: str
    expect: Literal["pass", "fail"]
    outcome: FreshOutcome
    exit_code: int | None = None
    #: The test's status in the run's log (a canary's: the expectation's status).
    logged: str = ""
    #: The runner of the lone run: the test's own ("" in older observations), or
    #: "plain", the second runner (``evalrepro/run/undertest.py``).
    runner: str = ""

    @property
    def tampered(self) -> bool:
        """A must-fail canary whose fresh process exited as if it passed (with the
        runner's normal shutdown or without it)."""
        return self.expect == "fail" and self.outcome in {"passed", "abnormal"}

    @property
    def disagrees(self) -> bool:
        """A FAIL_TO_PASS test the log calls passing whose fresh process did not pass."""
        return self.runner != "plain" and self._failed_alone

    @property
    def differs_under_test(self) -> bool:
        """A FAIL_TO_PASS test the log calls passing that did not pass when the second
        runner ran it, without its framework: the code under test behaves otherwise
        under test."""
        return self.runner == "plain" and self._failed_alone

    @property
    def _failed_alone(self) -> bool:
        return (
            self.expect == "pass"
            and self.logged in {"PASSED", "XFAIL", "XPASS"}
            and self.outcome in {"failed", "stopped", "abnormal"}
        )
