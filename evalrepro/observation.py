"""Observation: the normalized facts of one attempt, built from its artifacts only.

``observe`` reads the eval log (``testlog``), parses the test region (``parsers``) and
judges each listed test (``grading``). Whether the run counts is decided later, from
this record alone, by ``score``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from evalrepro.grading import TestsReport, tests_report
from evalrepro.parsers import LogParser, Status
from evalrepro.record import Record
from evalrepro.sample import Sample
from evalrepro.testlog import HarnessEvent, RegionStatus, read_test_log


class PatchStatus(StrEnum):
    APPLIED = "applied"  # tests ran against the patched tree
    REJECTED = "rejected"  # does not apply to the base commit: a product failure
    INVALID = "invalid"  # empty or corrupt: breaks the input contract


class ExecutionStatus(StrEnum):
    COMPLETED = "completed"
    TIMEOUT = "timeout"
    NOT_RUN = "not_run"


class ParserStatus(StrEnum):
    OK = "ok"
    NO_MARKERS = "no_markers"  # the test region never closed (crash, kill, timeout)
    SUSPECT = "suspect"  # duplicated markers: the log cannot be trusted
    EMPTY = "empty"  # nothing parsed and no evidence that the suite ran
    UNTRUSTED = "untrusted"  # the parsed lines contradict the runner's totals or exit code


# SWE-bench harness lines that mean the environment, not the patch, broke.
_INFRASTRUCTURE_EVENTS = (HarnessEvent.RESET_FAILED, HarnessEvent.TESTS_ERRORED)


class Observation(Record):
    record: Literal["Observation"] = "Observation"
    instance_id: str
    #: None when unknown (grading a bare log whose patch step was not recorded).
    patch_status: PatchStatus | None = None
    patch_method: str | None = None
    execution_status: ExecutionStatus = ExecutionStatus.COMPLETED
    infrastructure_error: str | None = None
    parser: str
    parser_status: ParserStatus
    parser_detail: str = ""
    test_exit_code: int | None = None
    status_map: dict[str, str]
    tests: TestsReport | None = None


def observe(
    log_text: str,
    sample: Sample,
    parser: LogParser,
    *,
    patch_status: PatchStatus | None = None,
    patch_method: str | None = None,
    execution_status: ExecutionStatus = ExecutionStatus.COMPLETED,
    infrastructure_error: str | None = None,
) -> Observation:
    log = read_test_log(log_text)
    if HarnessEvent.TESTS_TIMED_OUT in log.events:
        execution_status = ExecutionStatus.TIMEOUT
    if patch_status is None and HarnessEvent.PATCH_APPLY_FAILED in log.events:
        patch_status = PatchStatus.REJECTED
    if patch_status is None and log.patch_method is not None:
        patch_status, patch_method = PatchStatus.APPLIED, log.patch_method
    for event in _INFRASTRUCTURE_EVENTS:
        if event in log.events and infrastructure_error is None:
            infrastructure_error = f"harness reported '{event.value}'"

    common = {
        "instance_id": sample.instance_id,
        "patch_status": patch_status,
        "patch_method": patch_method,
        "execution_status": execution_status,
        "infrastructure_error": infrastructure_error,
        "parser": parser.name,
        "test_exit_code": log.exit_code,
    }
    if not log.usable:
        status = (
            ParserStatus.SUSPECT
            if log.region_status is RegionStatus.SUSPECT
            else ParserStatus.NO_MARKERS
        )
        return Observation(**common, parser_status=status, parser_detail=log.detail, status_map={})

    parsed = parser.parse(log.region)
    statuses = {test: str(status) for test, status in parsed.statuses.items()}
    status, detail = _judge_parse(parsed.problems, statuses, parsed.suite_ran, log.exit_code)
    return Observation(
        **common,
        parser_status=status,
        parser_detail=detail,
        status_map=statuses,
        tests=tests_report(
            statuses,
            sample.fail_to_pass,
            sample.pass_to_pass,
            fail_only=parser.fail_only or sample.fail_only,
        ),
    )


def _judge_parse(
    problems: tuple[str, ...], statuses: dict[str, str], suite_ran: bool, exit_code: int | None
) -> tuple[ParserStatus, str]:
    if problems:
        return ParserStatus.UNTRUSTED, "; ".join(problems)
    if not statuses and not suite_ran:
        # terminal-bench's all([]) == True trap: nothing parsed is not "all passed".
        return ParserStatus.EMPTY, "no test results in the test output"
    failing = {Status.FAILED, Status.ERROR}
    if exit_code not in (None, 0) and statuses and not any(s in failing for s in statuses.values()):
        # The code under test can print its own PASSED lines; the exit code it cannot fake.
        return (
            ParserStatus.UNTRUSTED,
            f"test command exited {exit_code} but the log reports no failing test",
        )
    return ParserStatus.OK, ""
