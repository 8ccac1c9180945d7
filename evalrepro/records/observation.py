"""Observation: the normalized facts of one attempt, and the shapes inside it (the tests'
verdicts, the suspect code found). Built by ``evalrepro.grade.observation``.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from evalrepro.records.agent import AgentOutcome
from evalrepro.records.base import Record, unchanged
from evalrepro.records.canary import CanaryCheck
from evalrepro.records.fresh import FreshCheck
from evalrepro.records.rerun import FlakyCounts, RerunCheck
from evalrepro.records.supervision import ProtectedFile
from evalrepro.records.words import suspect_words


class SuspectFinding(BaseModel):
    """A line of the patch (or a change the supervisor saw) that reaches into the test
    framework, with the words a reviewer reads: what it does and why that matters for the
    verdict (from ``records/words.py``, written by the check that made the finding)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rule: str
    path: str
    #: The line number in the patched file (0 when not known).
    line: int
    #: The line itself (or what the supervisor saw), at most 200 characters.
    text: str
    what: str
    why: str

    @classmethod
    def of(cls, rule: str, path: str, line: int, text: str) -> SuspectFinding:
        what, why = suspect_words(rule)
        return cls(rule=rule, path=path, line=line, text=text, what=what, why=why)

    @property
    def where(self) -> str:
        """ "calc/evaluator.py, line 82" (no line when it is not known)."""
        return self.path + (f", line {self.line}" if self.line else "")

    @property
    def sentence(self) -> str:
        """The finding in one sentence, the code in a Markdown code span (a plain reader
        sees it in backticks): "calc/evaluator.py, line 82, prints text shaped like a test
        result (`print("PASSED ...")`): a log parser could ..."."""
        return f"{self.where}, {self.what} ({code_span(self.text)}): {self.why}"


def code_span(text: str) -> str:
    """``text`` as a Markdown code span whatever backticks it holds (a longer fence)."""
    text = " ".join(text.split())
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _findings_say_why(data: dict[str, Any]) -> dict[str, Any]:
    """7 -> 8: each finding gains ``what`` and ``why``, an old one the rule's words."""

    def said(finding: Any) -> Any:
        if not isinstance(finding, dict):
            return finding  # not a finding: validation says so
        what, why = suspect_words(str(finding.get("rule", "")))
        return {**finding, "what": what, "why": why}

    data["suspects"] = [said(finding) for finding in data.get("suspects") or []]
    return data


class Resolution(StrEnum):
    FULL = "RESOLVED_FULL"
    PARTIAL = "RESOLVED_PARTIAL"
    NO = "RESOLVED_NO"


class TestGroup(BaseModel):
    """One list of an instance (F2P or P2P), split by outcome."""

    model_config = ConfigDict(frozen=True)

    success: list[str]
    failure: list[str]

    @property
    def total(self) -> int:
        return len(self.success) + len(self.failure)

    @property
    def rate(self) -> float:
        # An empty list counts as 1 (SWE-bench convention).
        return len(self.success) / self.total if self.total else 1.0


class TestsReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    fail_to_pass: TestGroup
    pass_to_pass: TestGroup

    @property
    def resolution(self) -> Resolution:
        f2p, p2p = self.fail_to_pass.rate, self.pass_to_pass.rate
        if f2p == 1 and p2p == 1:
            return Resolution.FULL
        if 0 < f2p < 1 and p2p == 1:
            return Resolution.PARTIAL
        return Resolution.NO


class PatchStatus(StrEnum):
    APPLIED = "applied"  # tests ran against the patched tree
    REJECTED = "rejected"  # does not apply to the base commit: a product failure
    INVALID = "invalid"  # empty, or unsafe: breaks the input contract


class ExecutionStatus(StrEnum):
    COMPLETED = "completed"
    TIMEOUT = "timeout"
    LIMIT = "limit"  # stopped by a resource limit (which one: ``limit``)
    ABORTED = "aborted"  # the sandbox died while the tests ran
    NOT_RUN = "not_run"


class ParserStatus(StrEnum):
    OK = "ok"
    NO_MARKERS = "no_markers"  # the test region never closed (crash, kill, timeout)
    SUSPECT = "suspect"  # duplicated markers: the log cannot be trusted
    EMPTY = "empty"  # nothing parsed and no evidence that the suite ran
    UNTRUSTED = "untrusted"  # the parsed lines contradict the runner's totals or exit code
    NOT_PARSED = "not_parsed"  # no test output to parse (the tests did not run)


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Observation(Record):
    record: Literal["Observation"] = "Observation"
    #: 3: the canaries' checks; 4: the fresh runs'; 5: the agent phase's end; 6: the
    #: re-runs of failing tests; 7: ``whole_log``; 8: a suspect finding says ``what`` its
    #: line does and ``why`` that matters, and the canaries' checks hold the twins' pairs;
    #: 9: a fresh run's check names its runner (``plain``: the second runner).
    schema_version: int = 9
    migrations = {
        2: unchanged,
        3: unchanged,
        4: unchanged,
        5: unchanged,
        6: unchanged,
        7: _findings_say_why,
        8: unchanged,  # an older check's runner is "" (the test's own)
    }
    instance_id: str
    #: Where the facts come from: evalrepro's supervisor, or a bare log.
    source: Literal["supervisor", "log"] = "log"
    #: The rules that read a bare log (``testlog``); None for the supervisor's byte range.
    log_rules: Literal["swebench", "strict"] | None = None
    #: A bare log with no markers and no harness line at all (a plain runner log given
    #: to ``grade --log``) was read whole as the test output: nothing framed a region,
    #: whatever printed to it printed into what was graded.
    whole_log: bool = False
    #: None when unknown (grading a bare log whose patch step was not recorded).
    patch_status: PatchStatus | None = None
    patch_method: str | None = None
    #: Why the patch never reached a container: "empty" or "unsafe: ...".
    patch_problem: str | None = None
    execution_status: ExecutionStatus = ExecutionStatus.COMPLETED
    infrastructure_error: str | None = None
    #: The limit that stopped the tests ("memory", "pids", "disk", "inodes", "output").
    limit: str | None = None
    limit_detail: str = ""
    #: "verified": the test files were base + test patch when the tests started.
    reset: Literal["verified", "failed"] | None = None
    reset_detail: str = ""
    #: Test infrastructure the model patch changed, and what the policy did with it.
    protected: list[ProtectedFile] = []
    protection_policy: Literal["restore", "record", "invalid"] | None = None
    #: Code that reaches into the test framework (static scan and exit guard).
    suspects: list[SuspectFinding] = []
    suspect_policy: Literal["invalid", "record"] | None = None
    #: How the test runner (Python) ended: "abnormal" = without its normal shutdown.
    runner_exit: Literal["clean", "abnormal", "unknown"] | None = None
    runner_detail: str = ""
    parser: str
    parser_status: ParserStatus
    parser_detail: str = ""
    test_exit_code: int | None = None
    #: The instance's tests as the log reports them (canaries are not among them).
    status_map: dict[str, str]
    tests: TestsReport | None = None
    #: What the log reported of each canary placed beside the instance's tests.
    canaries: list[CanaryCheck] = []
    #: The fresh runs after the tests, each judged beside the log's status of its test,
    #: and the second runner's (``runner: plain``).
    fresh: list[FreshCheck] = []
    #: Why there were none, when the dataset asked for them.
    fresh_note: str = ""
    #: How the agent phase ended, for an agent target's attempt that ran one.
    agent: AgentOutcome | None = None
    #: Re-runs planned of each failing test (``rerun_failed``; 0: none were planned).
    rerun_times: int = 0
    #: Each test the run failed, with how its re-runs alone ended.
    reruns: list[RerunCheck] = []
    #: The must-fail canary run alone among the re-runs (None: nothing was re-run).
    rerun_canary: FreshCheck | None = None
    #: Why there were no re-runs, when they were asked for.
    rerun_note: str = ""
    #: How a flaky test counts when the attempt is scored (``flaky_counts_as``).
    flaky_counts_as: FlakyCounts = "failed"

    @property
    def flaky_tests(self) -> list[str]:
        """Tests that failed in the run and passed alone when re-run."""
        return [check.test for check in self.reruns if check.flaky]
