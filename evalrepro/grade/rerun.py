"""Re-runs of failing tests: a flaky test told from a failing one, in the same sandbox.

With ``environment.rerun_failed: N``, after a trial's run (and its fresh runs) each test
the run failed is run again alone, up to N times, each in a fresh process the supervisor
starts; the first re-run that passes ends that test's re-runs. A test that failed in the
run and passed alone is *flaky*; one that failed every time is a stable failure.

Who decides what: the host parses the run's log (the supervisor never parses) and tells
the supervisor, on the container's stdin once the tests finished, which tests to re-run
(:func:`select_reruns`); each re-run is judged by its exit status alone, read from outside
the process, by the runner's own rules (``evalrepro.grade.fresh``). The observation picks
the failing tests again from the recorded log (:func:`failing_tests`, the same function)
and judges what the supervisor reported of each (:func:`check_reruns`): what the
supervisor says it ran beyond that is ignored, a failing test it did not re-run has no
outcome. A must-fail canary runs alone among the re-runs, at a place drawn per trial: a
process that exits 0 whatever it runs passes it (``runner_tampered``).

How a flaky test is scored is the user's policy (``environment.flaky_counts_as``): by
default as failed, so re-runs never make a trial resolved, they only say why it was not.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Mapping, Sequence

from evalrepro.grade.canary import check_canaries
from evalrepro.grade.fresh import RUNNERS, alone, fresh_outcome, lone_canary
from evalrepro.grade.grading import tests_report
from evalrepro.grade.parsers import LogParser, Status
from evalrepro.grade.parsers.registry import get_parser
from evalrepro.records.canary import Canary
from evalrepro.records.fresh import FreshCheck, FreshResult, FreshRun
from evalrepro.records.rerun import FlakyCounts, RerunCheck, RerunPlan, RerunScope
from evalrepro.records.testspec import TestSpec
from evalrepro.sample import Sample

#: Failing tests re-run at most per trial (the rest are named, without outcomes): a patch
#: that breaks the whole suite must not turn one trial into thousands of runner starts.
MAX_RERUN_TESTS = 50
#: A test name the log gives (validation's scope) longer than this is not re-run.
MAX_NAME = 1000
_FAILING = {Status.FAILED, Status.ERROR}


def plan_reruns(
    spec: TestSpec,
    parser: LogParser,
    sample: Sample,
    canaries: Sequence[Canary],
    *,
    times: int,
    scope: RerunScope = "listed",
    counts_as: FlakyCounts = "failed",
) -> tuple[RerunPlan | None, str]:
    """The trial's re-run plan, or None and why there is none when re-runs were asked."""
    if times == 0:
        return None, ""
    runner = RUNNERS.get(parser.runner or "")
    if runner is None:
        return None, f"parser {parser.name} names no runner that can select one test"
    canary = lone_canary(runner, canaries, spec)
    if canary is None:
        # Without a must-fail canary beside them, a process that always exits 0 would pass.
        return None, "no must-fail canary to run alone beside the re-runs"
    plan = RerunPlan(
        times=times,
        scope=scope,
        parser=parser.name,
        fail_only=parser.fail_only or sample.fail_only,
        runner=runner.name,
        test_command=spec.test_cmd,
        fail_to_pass=list(sample.fail_to_pass) if scope == "listed" else [],
        pass_to_pass=list(sample.pass_to_pass) if scope == "listed" else [],
        canary=canary,
        flaky_counts_as=counts_as,
    )
    return plan, ""


def failing_tests(plan: RerunPlan, statuses: Mapping[str, str]) -> list[tuple[str, str]]:
    """(test, group) of every test the run failed that the runner can select alone, in
    the lists' order (FAIL_TO_PASS first), or the log's for scope "failing"."""
    if plan.scope == "listed":
        report = tests_report(
            statuses, plan.fail_to_pass, plan.pass_to_pass, fail_only=plan.fail_only
        )
        failing = [(t, "fail_to_pass") for t in report.fail_to_pass.failure]
        failing += [(t, "pass_to_pass") for t in report.pass_to_pass.failure]
    else:
        failing = [(t, "other") for t, status in statuses.items() if status in _FAILING]
    runner = RUNNERS[plan.runner]
    return [
        (test, group)
        for test, group in failing
        if len(test) <= MAX_NAME and runner.select(test) is not None
    ]


def select_reruns(
    plan: RerunPlan,
    canaries: Sequence[Canary],
    region: str | None,
    rng: random.Random | None = None,
) -> list[FreshRun]:
    """What the host asks the supervisor to re-run, from the run's test output: the
    failing tests (at most :data:`MAX_RERUN_TESTS`) and the lone canary among them, or
    nothing (no output, nothing failed)."""
    if region is None:
        return []
    parsed = get_parser(plan.parser).parse(region)
    statuses = {test: str(status) for test, status in parsed.statuses.items()}
    listed = [*plan.fail_to_pass, *plan.pass_to_pass]
    statuses = check_canaries(canaries, [c.name for c in canaries], statuses, listed)[1]
    chosen = failing_tests(plan, statuses)[:MAX_RERUN_TESTS]
    if not chosen or plan.canary is None:
        return []
    runner = RUNNERS[plan.runner]
    runs = [alone(plan.test_command, runner, test, runner.select(test) or "") for test, _ in chosen]
    rng = rng or random.SystemRandom(secrets.randbits(64))
    runs.insert(rng.randrange(len(runs) + 1), plan.canary)  # its place is not known ahead
    return runs


def check_reruns(
    plan: RerunPlan, results: Sequence[FreshResult], statuses: Mapping[str, str]
) -> tuple[list[RerunCheck], FreshCheck | None]:
    """Each failing test with its re-runs' outcomes, and the lone canary's check (None:
    it was not run: nothing was re-run)."""
    outcomes: dict[str, list] = {}
    canary: FreshCheck | None = None
    for result in results:
        if plan.canary is not None and result.test == plan.canary.test:
            outcome = fresh_outcome(plan.canary, result)
            canary = FreshCheck(
                test=result.test, expect="fail", outcome=outcome, exit_code=result.exit_code
            )
            continue
        run = FreshRun(test=result.test, expect="pass", command="", runner=plan.runner)
        outcomes.setdefault(result.test, []).append(fresh_outcome(run, result))
    failing = failing_tests(plan, statuses)
    checks = [
        RerunCheck(
            test=test,
            group=group,  # type: ignore[arg-type]
            outcomes=outcomes.get(test, [])[: plan.times] if i < MAX_RERUN_TESTS else [],
        )
        for i, (test, group) in enumerate(failing)
    ]
    return checks, canary
