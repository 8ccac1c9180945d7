"""Dataset validation's records: what running an instance's tests before and after its gold
patch, several times each, says about each test and about the instance.

Built by ``evalrepro.validation.transitions`` from the observations of the two sides'
runs; how a transition and a verdict are decided: docs/semantics.md ("Test lists and
flaky tests").
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from evalrepro.records.base import Record, unchanged

#: What a test does from before the gold patch (base + test patch) to after it:
#: ``FAIL_TO_PASS`` / ``PASS_TO_PASS`` / ``FAIL_TO_FAIL`` / ``PASS_TO_FAIL`` when every
#: repeat of each side agrees; ``SKIPPED`` when it was skipped in every run of both sides;
#: ``flaky`` when the repeats of one side disagree (passed in some, not in others), or
#: when it failed in a run and passed alone when re-run (``environment.rerun_failed``).
Transition = Literal[
    "FAIL_TO_PASS", "PASS_TO_PASS", "FAIL_TO_FAIL", "PASS_TO_FAIL", "SKIPPED", "flaky"
]

#: An instance's verdict, the first that holds, in this order:
#: ``run_untrusted``: a run's score is invalid for what ran in it (a tampered runner,
#: suspect code, fresh runs that disagree with the log, test files changed, ...): what it
#: reported is not the tests' outcome, so nothing it reported is used;
#: ``tests_not_run``: a run's tests did not run or did not finish (the reason is the
#: observation's: a limit, a timeout, a test command that could not be started), or not
#: one test passed in any run of either side (the environment is broken, or the test
#: command reports nothing);
#: ``log_unparseable``: a run's log cannot be read as test results (other runs passed tests);
#: ``gold_breaks_tests``: a test passes in every run before the gold patch and fails in
#: every run after it (PASS_TO_FAIL); ``no_fail_to_pass``: the test patch catches nothing;
#: ``flaky_tests``: usable, with flaky tests left out of its lists; ``valid``.
Verdict = Literal[
    "run_untrusted",
    "tests_not_run",
    "log_unparseable",
    "gold_breaks_tests",
    "no_fail_to_pass",
    "flaky_tests",
    "valid",
]


class TestTransition(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    test: str
    transition: Transition
    #: Runs of each side in which the test passed, of how many.
    before_passed: int = Field(ge=0)
    after_passed: int = Field(ge=0)
    repeats: int = Field(ge=1)
    #: Runs (of either side) in which it failed in the suite and passed when re-run alone
    #: (``environment.rerun_failed``): flaky, or dependent on the tests run before it.
    passed_alone: int = Field(default=0, ge=0)


class RunFacts(BaseModel):
    """What one run of one side left that validation reads (from its observation)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The tests as the log reports them.
    status_map: dict[str, str]
    #: Tests that failed in the run and passed when re-run alone.
    passed_alone: list[str] = []
    #: Whether the run's score trusts what it reported (not invalid for what ran in it),
    #: whether the tests ran to the end and their log could be read, and if not why.
    trusted: bool = True
    ran: bool = True
    parsed: bool = True
    problem: str = ""


class FlakyBound(BaseModel):
    """How many runs of each side an instance got, and what that bounds: a test that, in
    each run of a side (independently), has the other outcome than the one it is listed
    with with probability at least ``min_rate`` (fails after the gold patch, for
    FAIL_TO_PASS and PASS_TO_PASS; passes before it, for FAIL_TO_PASS) is written into a
    list with probability at most ``miss_probability`` = (1 - min_rate) ** min(runs)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min_rate: float = Field(gt=0, lt=1)
    #: The runs each side was to get (``validation.flaky``, or ``validation.repeats``).
    planned: int = Field(ge=1)
    runs_before: int = Field(ge=0)
    runs_after: int = Field(ge=0)
    #: The bound the runs made reach (1.0: a side has no run).
    miss_probability: float = Field(ge=0, le=1)
    #: Why fewer runs than planned were made ("" when every planned run was made).
    stopped: str = ""


class InstanceValidation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    instance_id: str
    verdict: Verdict
    #: One line for a reader: the reason of a run that did not run, the tests that broke.
    detail: str = ""
    fail_to_pass: list[str] = []
    pass_to_pass: list[str] = []
    fail_to_fail: list[str] = []
    pass_to_fail: list[str] = []
    flaky: list[str] = []
    transitions: list[TestTransition] = []
    #: Where the dataset's own lists, when it declares them, differ from the derived ones:
    #: one line each ("FAIL_TO_PASS declares t: derived PASS_TO_PASS").
    disagreements: list[str] = []
    #: The runs made and the flakiness bound they reach (None in reports of schema 1).
    bound: FlakyBound | None = None


class ValidationReport(Record):
    record: Literal["ValidationReport"] = "ValidationReport"
    #: 2: each instance's ``bound`` (runs made, the bound reached), the report's
    #: ``min_rate`` and ``miss_probability``, and the verdict ``run_untrusted``.
    schema_version: int = 2
    migrations = {1: unchanged}

    dataset: str
    #: The runs planned for each side (each instance's ``bound`` says how many were made).
    repeats: int = Field(ge=1)
    #: The bound asked for (``validation.flaky``); None when ``validation.repeats`` was
    #: given instead, and in reports of schema 1.
    min_rate: float | None = None
    miss_probability: float | None = None
    #: sha256 (raw bytes) of each side's lockfile: the runs this report was made from.
    before_lockfile: str
    after_lockfile: str
    harness_version: str
    instances: list[InstanceValidation]
