"""Dataset validation's records: what running an instance's tests before and after its gold
patch, several times each, says about each test and about the instance.

Built by ``evalrepro.validation.transitions`` from the observations of the two sides'
runs; how a transition and a verdict are decided: docs/semantics.md ("Test lists and
flaky tests").
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from evalrepro.records.base import Record

#: What a test does from before the gold patch (base + test patch) to after it:
#: ``FAIL_TO_PASS`` / ``PASS_TO_PASS`` / ``FAIL_TO_FAIL`` / ``PASS_TO_FAIL`` when every
#: repeat of each side agrees; ``SKIPPED`` when it was skipped in every run of both sides;
#: ``flaky`` when the repeats of one side disagree (passed in some, not in others), or
#: when it failed in a run and passed alone when re-run (``environment.rerun_failed``).
Transition = Literal[
    "FAIL_TO_PASS", "PASS_TO_PASS", "FAIL_TO_FAIL", "PASS_TO_FAIL", "SKIPPED", "flaky"
]

#: An instance's verdict, the first that holds, in this order:
#: ``tests_not_run``: a run's tests did not run (the reason is the observation's), or not
#: one test passed in any run of either side (the environment is broken);
#: ``log_unparseable``: a run's log cannot be read as test results;
#: ``gold_breaks_tests``: a test passes in every run before the gold patch and fails in
#: every run after it (PASS_TO_FAIL); ``no_fail_to_pass``: the test patch catches nothing;
#: ``flaky_tests``: usable, with flaky tests left out of its lists; ``valid``.
Verdict = Literal[
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
    #: Whether the tests ran to the end and their log could be read, and if not why.
    ran: bool = True
    parsed: bool = True
    problem: str = ""


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


class ValidationReport(Record):
    record: Literal["ValidationReport"] = "ValidationReport"
    schema_version: int = 1

    dataset: str
    repeats: int = Field(ge=1)
    #: sha256 (raw bytes) of each side's lockfile: the runs this report was made from.
    before_lockfile: str
    after_lockfile: str
    harness_version: str
    instances: list[InstanceValidation]
