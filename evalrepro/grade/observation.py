"""Observation: the normalized facts of one attempt, built from its artifacts only.

Two sources:

* an attempt evalrepro ran (``source = "supervisor"``): the facts come from the
  supervisor's report (``supervisor.json``: patch method, protected files, reset
  verification, exit code, limits, the exit guard) and the test region is the byte range
  the report records, not text between marker lines; the patch checks
  (``patchcheck``) add what was refused or found suspect before the container;
* a bare log (``source = "log"``, ``evalrepro grade``, a log from another harness): the
  region is cut out between SWE-bench's marker lines (``testlog``) by the rules the
  caller names (``log_rules``: swebench 5.0.2's, the default, or ``strict``), and only
  what the log itself says is known.

Either way the region is parsed (``parsers``) and each listed test judged
(``grading``). Whether the attempt counts is decided later, from this record alone, by
``score``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

from evalrepro.grade.canary import check_canaries
from evalrepro.grade.fresh import check_fresh
from evalrepro.grade.grading import tests_report
from evalrepro.grade.parsers import Family, LogParser, Status
from evalrepro.grade.rerun import check_reruns
from evalrepro.grade.testlog import (
    HarnessEvent,
    LogRules,
    RegionStatus,
    TestLog,
    plain_log,
    read_test_log,
    suite_ran_shown,
)
from evalrepro.records.agent import AgentOutcome
from evalrepro.records.canary import Canary
from evalrepro.records.fresh import FreshRun
from evalrepro.records.observation import (
    ExecutionStatus,
    Observation,
    ParserStatus,
    PatchStatus,
    SuspectFinding,
)
from evalrepro.records.rerun import RerunPlan
from evalrepro.records.supervision import SupervisorReport
from evalrepro.records.testspec import ResolvedProtection
from evalrepro.rules.patchcheck import PatchCheck
from evalrepro.sample import Sample

# SWE-bench harness lines that mean the environment, not the patch, broke.
_INFRASTRUCTURE_EVENTS = (HarnessEvent.RESET_FAILED, HarnessEvent.TESTS_ERRORED)


def observe(
    log_text: str,
    sample: Sample,
    parser: LogParser,
    *,
    rules: LogRules = "swebench",
    patch_status: PatchStatus | None = None,
    patch_method: str | None = None,
    execution_status: ExecutionStatus = ExecutionStatus.COMPLETED,
    infrastructure_error: str | None = None,
    plain: Literal["refuse", "whole_log"] = "refuse",
) -> Observation:
    """The Observation of a bare log, read by ``rules`` (``testlog``).

    ``"swebench"`` (the default: a bare log comes from elsewhere, most often SWE-bench's
    own harness) reproduces swebench 5.0.2's ``get_logs_eval`` for every compatible
    parser: "found" exactly when ``parser_status`` is OK, and then its status map, so
    the F2P/P2P lists and the resolution are its own; when it finds nothing ("not
    found"), the log is unscorable here and, as there, has no status map and no lists. A
    native parser gets the same region and fallback, still checks the runner's totals
    (a mismatch is ``untrusted``) and gives its own evidence that the suite ran; of a log
    it cannot score it keeps what it read in ``status_map``, and its detail says so.
    ``"strict"`` is the distrusting reading: whole-line markers, one region, no
    fallback to the whole log, duplicate markers unscorable.

    ``plain``: what a log with no markers and no harness line at all (``testlog.plain_log``:
    a runner's own output) is. ``refuse`` (swebench's rule, and every log a harness
    wrote): unscorable, no markers. ``whole_log`` (``grade --log`` of a plain log, read
    by swebench's rules): all of it is the test output, and the Observation says so
    (``whole_log``). Under the strict rules it is always refused.
    """
    if plain == "whole_log" and rules == "swebench" and plain_log(log_text):
        return _observe_whole(log_text, sample, parser, execution_status, infrastructure_error)
    log = read_test_log(log_text, rules)
    if HarnessEvent.TESTS_TIMED_OUT in log.events or log.harness_timeout:
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
        "source": "log",
        "log_rules": rules,
        "patch_status": patch_status,
        "patch_method": patch_method,
        "execution_status": execution_status,
        "infrastructure_error": infrastructure_error,
        "parser": parser.name,
        "test_exit_code": log.exit_code,
    }
    if rules == "swebench" and log.events:
        # swebench grades nothing once one of its harness lines is anywhere in the log.
        shown = ", ".join(f"'{event.value}'" for event in log.events)
        return Observation(
            **common,
            parser_status=ParserStatus.NOT_PARSED,
            parser_detail=f"the log holds {shown}: swebench grades no test output then",
            status_map={},
        )
    if not log.usable:
        status = (
            ParserStatus.SUSPECT
            if log.region_status is RegionStatus.SUSPECT
            else ParserStatus.NO_MARKERS
        )
        return Observation(**common, parser_status=status, parser_detail=log.detail, status_map={})
    if rules == "strict":
        return Observation(**common, **_parsed(log.region, log.exit_code, sample, parser))
    return Observation(**common, **_parsed_as_swebench(log, sample, parser))


def _observe_whole(
    log_text: str,
    sample: Sample,
    parser: LogParser,
    execution_status: ExecutionStatus,
    infrastructure_error: str | None,
) -> Observation:
    """A plain log, all of it the test output: no region, no exit code, no harness line
    to read; the parser's own evidence (and swebench's, for its parsers) that the suite
    ran still decides whether an empty map is a result."""
    log = read_test_log(log_text, "swebench")
    if log.harness_timeout:
        execution_status = ExecutionStatus.TIMEOUT
    # No marker and no exit code line (plain_log): the region is all of it.
    whole = replace(log, region=log.text, region_status=RegionStatus.OK)
    parsed = _parsed_as_swebench(whole, sample, parser)
    said = "no markers: the whole log was read as the test output"
    if parsed["parser_status"] is not ParserStatus.OK:
        said = f"{said}; {parsed['parser_detail']}"
    parsed["parser_detail"] = said
    return Observation(
        instance_id=sample.instance_id,
        source="log",
        log_rules="swebench",
        whole_log=True,
        execution_status=execution_status,
        infrastructure_error=infrastructure_error,
        parser=parser.name,
        **parsed,
    )


def _parsed_as_swebench(log: TestLog, sample: Sample, parser: LogParser) -> dict:
    """The rest of swebench's ``get_logs_eval``, once its harness lines and markers passed."""
    parsed = parser.parse(log.region)
    whole_log = not parsed.statuses
    if whole_log:
        # swebench re-parses the whole log when the region yields nothing (install
        # output, the patch's diff and every trace line included).
        parsed = parser.parse(log.text)
    statuses = {test: str(status) for test, status in parsed.statuses.items()}
    # swebench accepts an empty map only with its SUITE_RAN evidence in the whole log;
    # a native parser has better evidence, the runner's own totals in what it parsed.
    suite_ran = suite_ran_shown(log.text) if parser.family is Family.SWEBENCH else parsed.suite_ran
    status, detail = _judge_parse(parsed.problems, statuses, suite_ran, log.exit_code)
    if status is ParserStatus.OK and whole_log:
        detail = "no results between the markers: the whole log was parsed, as swebench does"
    if status is not ParserStatus.OK:
        if parser.family is Family.SWEBENCH:
            # swebench's get_logs_eval answers ({}, False) for a log it cannot read: no
            # map, no lists. A compatible parser says the same, key for key.
            return {"parser_status": status, "parser_detail": detail, "status_map": {}}
        # A native parser says more than swebench would (what it read), and says so.
        detail += f"; status_map: what {parser.name} read of the log, not graded"
    return _graded(statuses, status, detail, sample, parser)


def observe_attempt(
    sample: Sample,
    parser: LogParser,
    protection: ResolvedProtection,
    check: PatchCheck,
    *,
    report: SupervisorReport | None,
    region: str | None,
    canaries: Sequence[Canary] = (),
    fresh: Sequence[FreshRun] = (),
    fresh_note: str = "",
    rerun: RerunPlan | None = None,
    rerun_note: str = "",
    agent: AgentOutcome | None = None,
) -> Observation:
    """The Observation of an attempt evalrepro ran (or refused to run).

    ``check`` is the patch check (a refused patch never ran: ``report`` is None);
    ``report`` the supervisor's report with the runtime's own facts; ``region`` the test
    output read back by the report's byte range; ``canaries`` the program's (those the
    supervisor placed are checked, and left out of the status map); ``fresh`` and
    ``fresh_note`` the program's fresh runs (judged against the supervisor's results);
    ``rerun`` and ``rerun_note`` its plan of re-runs (the failing tests picked again from
    the log, each judged by the re-runs the supervisor reported of it);
    ``agent`` the agent phase's end, for an agent target's attempt (an agent that left no
    patch to test ran no tests; one the sandbox failed is an infrastructure error).
    """
    facts: dict = {
        "instance_id": sample.instance_id,
        "source": "supervisor",
        "parser": parser.name,
        "protection_policy": protection.policy,
        "suspect_policy": protection.suspect,
        "suspects": list(check.suspects),
        "status_map": {},
        "parser_status": ParserStatus.NOT_PARSED,
        "agent": agent,
    }
    if agent is not None and agent.status != "submitted":
        infrastructure = None
        if agent.status == "infrastructure_error":
            infrastructure = f"agent phase: {agent.detail}"
        return Observation(
            **facts,
            execution_status=ExecutionStatus.NOT_RUN,
            infrastructure_error=infrastructure,
        )
    if check.problem is not None:
        return Observation(
            **facts,
            patch_status=PatchStatus.INVALID,
            patch_problem=check.problem,
            execution_status=ExecutionStatus.NOT_RUN,
        )
    if report is None:
        return Observation(
            **facts,
            execution_status=ExecutionStatus.NOT_RUN,
            infrastructure_error="the attempt has no supervisor report",
        )
    problem = report.runtime.error or _infrastructure(report)
    if report.patch is not None:
        facts["patch_status"] = {
            "applied": PatchStatus.APPLIED,
            "rejected": PatchStatus.REJECTED,
            "unsafe": PatchStatus.INVALID,
        }[report.patch.status]
        facts["patch_method"] = report.patch.method
        if report.patch.status == "unsafe":
            facts["patch_problem"] = f"unsafe: {report.patch.detail}"
        # The supervisor keeps only replacements by code in files the patch changed.
        facts["suspects"] += [
            SuspectFinding.of(
                "framework_replaced",
                item.file,
                0,
                f"{item.target} replaced by code in {item.file} (seen at the runner's exit)",
            )
            for item in (report.tests.replaced if report.tests else [])
        ]
        facts["suspects"] += [
            SuspectFinding.of(
                "changed_during_run",
                item.split(" (", 1)[0],
                0,
                f"{item} changed while the tests ran",
            )
            for item in (report.tests.changed_during_run if report.tests else [])
            + (report.fresh.changed_during_run if report.fresh else [])
            + (report.rerun.changed_during_run if report.rerun else [])
        ]
    if report.protect is not None:
        facts["protected"] = report.protect.touched
    if report.reset is not None:
        facts["reset"] = "verified" if report.reset.ok else "failed"
        facts["reset_detail"] = report.reset.detail or (report.reset.reason or "")
    tests = report.tests
    if tests is None:
        execution = ExecutionStatus.NOT_RUN
        if report.tests_started is not None and problem is None:
            if report.runtime.deadline_passed:
                execution = ExecutionStatus.TIMEOUT
                facts["limit_detail"] = "the tests outran the host's deadline: container removed"
            else:
                execution = ExecutionStatus.ABORTED
                facts["limit_detail"] = "the sandbox ended while the tests ran (killed or crashed)"
        return Observation(**facts, execution_status=execution, infrastructure_error=problem)

    facts["test_exit_code"] = tests.exit_code
    facts["runner_exit"] = tests.runner_exit
    facts["runner_detail"] = tests.runner_detail
    execution = ExecutionStatus.COMPLETED
    if tests.stopped is not None:
        if tests.stopped.limit == "timeout":
            execution = ExecutionStatus.TIMEOUT
        else:
            execution, facts["limit"] = ExecutionStatus.LIMIT, tests.stopped.limit
        facts["limit_detail"] = tests.stopped.detail
    if region is None:
        problem = problem or "test_output.txt does not hold the recorded test output"
        return Observation(**facts, execution_status=execution, infrastructure_error=problem)
    facts |= _parsed(region, tests.exit_code, sample, parser)
    placed = report.reset.canaries if report.reset is not None else []
    if placed:
        facts["canaries"], facts["status_map"] = check_canaries(
            canaries, placed, facts["status_map"], [*sample.fail_to_pass, *sample.pass_to_pass]
        )
    facts["fresh_note"] = fresh_note
    if fresh:
        results = report.fresh.runs if report.fresh is not None else []
        facts["fresh"] = check_fresh(fresh, results, facts["status_map"])
    facts["rerun_note"] = rerun_note
    if rerun is not None:
        facts["flaky_counts_as"], facts["rerun_times"] = rerun.flaky_counts_as, rerun.times
        results = report.rerun.runs if report.rerun is not None else []
        facts["reruns"], facts["rerun_canary"] = check_reruns(rerun, results, facts["status_map"])
    return Observation(**facts, execution_status=execution, infrastructure_error=problem)


def _infrastructure(report: SupervisorReport) -> str | None:
    """What went wrong on the harness's side of the sandbox, if anything."""
    if report.stream_problem is not None:
        return report.stream_problem
    if report.error is not None:
        return f"supervisor failed in its {report.error.phase} phase: {report.error.detail}"
    if report.start is None:
        return "the supervisor never started"
    if not report.complete and report.tests_started is None:
        if report.runtime.deadline_passed:
            return "the sandbox did not reach its tests by the host's deadline"
        return "the sandbox ended before the tests started"
    if report.reset is not None and report.reset.reason == "test_patch_failed":
        return f"the test patch does not apply to the base commit ({report.reset.detail})"
    return None


def _parsed(region: str, exit_code: int | None, sample: Sample, parser: LogParser) -> dict:
    parsed = parser.parse(region)
    statuses = {test: str(status) for test, status in parsed.statuses.items()}
    status, detail = _judge_parse(parsed.problems, statuses, parsed.suite_ran, exit_code)
    return _graded(statuses, status, detail, sample, parser)


def _graded(
    statuses: dict[str, str], status: ParserStatus, detail: str, sample: Sample, parser: LogParser
) -> dict:
    """An observation's parse fields: the status map and the run's lists graded on it."""
    return {
        "parser_status": status,
        "parser_detail": detail,
        "status_map": statuses,
        "tests": tests_report(
            statuses,
            sample.fail_to_pass,
            sample.pass_to_pass,
            fail_only=parser.fail_only or sample.fail_only,
        ),
    }


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
