"""Score: resolved / unresolved / invalid, decided from an Observation alone.

The order of judgement is fixed (../shared/docs/semantics.md): infrastructure, then the
patch, then what the patch did to the test setup, then how the run ended, then the log,
then the tests. It is written as a table so the order is visible and cannot drift: the
first rule that matches decides.

What the patch is to blame for and cannot be scored as a fix is ``unresolved`` (empty,
unsafe, rejected); what leaves the tests' verdict untrustworthy is ``invalid`` (a test
reset that did not hold, test infrastructure changed under the ``invalid`` policy,
suspect code under the ``invalid`` policy, a timeout, a limit, a sandbox that died, a
runner that left without its normal shutdown while reporting success, an unscorable
log). Every invalid trial still counts in the denominator.
"""

from __future__ import annotations

from collections.abc import Callable

from evalrepro.records.canary import CanaryCheck
from evalrepro.records.observation import (
    ExecutionStatus,
    Observation,
    ParserStatus,
    PatchStatus,
    Resolution,
)
from evalrepro.records.score import Outcome, Score

Rule = Callable[[Observation], bool]
Detail = Callable[[Observation], str]

_LIMITS = ("memory", "pids", "disk", "inodes", "output")


def _suspects(o: Observation) -> str:
    # Each finding in words, with its line: a reviewer reads what it does and why it matters.
    shown = [s.sentence for s in o.suspects[:5]]
    more = f" and {len(o.suspects) - 5} more" if len(o.suspects) > 5 else ""
    return "; ".join(shown) + more


def _protected(o: Observation) -> str:
    return ", ".join(f"{p.path} ({p.reason})" for p in o.protected[:5]) + (
        f" and {len(o.protected) - 5} more" if len(o.protected) > 5 else ""
    )


def _canaries(o: Observation) -> str:
    wrong = [c for c in o.canaries if c.tampered]
    shown = [_canary(c) for c in wrong[:3]]
    lone = [f for f in [*o.fresh, *([o.rerun_canary] if o.rerun_canary else [])] if f.tampered]
    shown += [f"canary {f.test} (must fail) exited {f.exit_code} alone" for f in lone]
    return "; ".join(shown) + (f" and {len(wrong) - 3} more" if len(wrong) > 3 else "")


def _canary(c: CanaryCheck) -> str:
    if c.twin_of is None:
        return f"canary {c.name} (must {c.expect}) reported {c.reported}"
    pair = next(p for p in c.pairs if p.tampered)
    return f"{pair.test} {pair.original} beside its twin {c.name} {pair.twin}"


def _fresh(o: Observation) -> str:
    wrong = [f for f in o.fresh if f.disagrees]
    shown = [f"{f.test} {f.logged} in the run, {f.outcome} alone" for f in wrong[:3]]
    return "; ".join(shown) + (f" and {len(wrong) - 3} more" if len(wrong) > 3 else "")


def _under_test(o: Observation) -> str:
    wrong = [f for f in o.fresh if f.differs_under_test]
    shown = [f"{f.test} {f.logged} in the run, {f.outcome} without its runner" for f in wrong[:3]]
    return "; ".join(shown) + (f" and {len(wrong) - 3} more" if len(wrong) > 3 else "")


# (reason, outcome, applies, detail), judged in order.
JUDGEMENT: tuple[tuple[str, Outcome, Rule, Detail], ...] = (
    (
        "infrastructure_error",
        Outcome.INVALID,
        lambda o: o.infrastructure_error is not None,
        lambda o: o.infrastructure_error or "",
    ),
    # An agent that did not leave a patch to test: its own answer, not the host's fault.
    (
        "agent_budget_exhausted",
        Outcome.UNRESOLVED,
        lambda o: o.agent is not None and o.agent.status == "budget_exhausted",
        lambda o: o.agent.detail if o.agent is not None else "",
    ),
    (
        "agent_error",
        Outcome.UNRESOLVED,
        lambda o: o.agent is not None and o.agent.status == "agent_error",
        lambda o: o.agent.detail if o.agent is not None else "",
    ),
    (
        "agent_no_diff",
        Outcome.UNRESOLVED,
        lambda o: o.agent is not None and o.agent.status == "no_diff",
        lambda o: o.agent.detail if o.agent is not None else "",
    ),
    ("patch_empty", Outcome.UNRESOLVED, lambda o: o.patch_problem == "empty", lambda o: ""),
    (
        "patch_unsafe",
        Outcome.UNRESOLVED,
        lambda o: (o.patch_problem or "").startswith("unsafe"),
        lambda o: (o.patch_problem or "").removeprefix("unsafe: "),
    ),
    (
        "patch_rejected",
        Outcome.UNRESOLVED,
        lambda o: o.patch_status is PatchStatus.REJECTED,
        lambda o: "",
    ),
    (
        "patch_invalid",
        Outcome.UNRESOLVED,
        lambda o: o.patch_status is PatchStatus.INVALID,
        lambda o: o.patch_problem or "",
    ),
    ("test_reset_failed", Outcome.INVALID, lambda o: o.reset == "failed", lambda o: o.reset_detail),
    (
        "test_infrastructure_changed",
        Outcome.INVALID,
        lambda o: o.protection_policy == "invalid" and bool(o.protected),
        _protected,
    ),
    (
        "suspect_patch",
        Outcome.INVALID,
        lambda o: o.suspect_policy == "invalid" and bool(o.suspects),
        _suspects,
    ),
    (
        "timeout",
        Outcome.INVALID,
        lambda o: o.execution_status is ExecutionStatus.TIMEOUT,
        lambda o: o.limit_detail,
    ),
    *(
        (
            f"limit_{name}",
            Outcome.INVALID,
            (lambda o, name=name: o.execution_status is ExecutionStatus.LIMIT and o.limit == name),
            lambda o: o.limit_detail,
        )
        for name in _LIMITS
    ),
    (
        "sandbox_died",
        Outcome.INVALID,
        lambda o: o.execution_status is ExecutionStatus.ABORTED,
        lambda o: o.limit_detail,
    ),
    (
        "not_run",
        Outcome.INVALID,
        lambda o: o.execution_status is ExecutionStatus.NOT_RUN,
        lambda o: "",
    ),
    (
        "runner_exit_abnormal",
        Outcome.INVALID,
        # Only a success is suspicious: a crash that reports failure is a failure.
        lambda o: o.runner_exit == "abnormal" and o.test_exit_code == 0,
        lambda o: o.runner_detail,
    ),
    (
        "log_unparseable",
        Outcome.INVALID,
        lambda o: o.parser_status is not ParserStatus.OK,
        lambda o: o.parser_detail,
    ),
    (
        # Tests whose outcome the harness knows, reported otherwise: the runner's report
        # is not the tests' outcome, whatever it says of the instance's own tests. A
        # must-fail canary whose fresh process exits as passing says the same of the
        # exit status.
        "runner_tampered",
        Outcome.INVALID,
        lambda o: (
            any(c.tampered for c in o.canaries)
            or any(f.tampered for f in o.fresh)
            or (o.rerun_canary is not None and o.rerun_canary.tampered)
        ),
        _canaries,
    ),
    (
        # A FAIL_TO_PASS test the log calls passing, failing when run alone: the log and
        # the exit status the supervisor read from outside disagree.
        "fresh_disagrees",
        Outcome.INVALID,
        lambda o: any(check.disagrees for check in o.fresh),
        _fresh,
    ),
    (
        # A FAIL_TO_PASS test the log calls passing that fails when the second runner runs
        # it without its framework: the code under test behaves otherwise under test.
        "differs_under_test",
        Outcome.INVALID,
        lambda o: any(check.differs_under_test for check in o.fresh),
        _under_test,
    ),
)


#: The reasons of a trial whose tests were graded (after every rule above held back).
TEST_REASONS: dict[str, Outcome] = {
    "tests_passed": Outcome.RESOLVED,
    "tests_failed": Outcome.UNRESOLVED,
    # Every failing test passed when re-run alone; the policy (flaky_counts_as) decides.
    "tests_flaky": Outcome.UNRESOLVED,
    "tests_passed_on_rerun": Outcome.RESOLVED,
}


def score(observation: Observation) -> Score:
    for reason, outcome, applies, detail in JUDGEMENT:
        if applies(observation):
            return Score(outcome=outcome, reason=reason, detail=detail(observation))
    assert observation.tests is not None  # parser_status OK implies a tests report
    resolution = observation.tests.resolution
    if resolution is Resolution.FULL:
        return Score(outcome=Outcome.RESOLVED, reason="tests_passed", resolution=resolution)
    flaky = observation.flaky_tests
    if not flaky:
        return Score(outcome=Outcome.UNRESOLVED, reason="tests_failed", resolution=resolution)
    # Failing tests that passed when re-run alone: the policy decides only when every
    # failing test is one of them (a stable failure fails the trial whatever it says).
    report = observation.tests
    stable = [
        t for t in report.fail_to_pass.failure + report.pass_to_pass.failure if t not in flaky
    ]
    shown = ", ".join(flaky[:3]) + (f" and {len(flaky) - 3} more" if len(flaky) > 3 else "")
    detail = f"failed in the run, passed alone when re-run: {shown}"
    if stable:
        return Score(
            outcome=Outcome.UNRESOLVED, reason="tests_failed", detail=detail, resolution=resolution
        )
    canary = observation.rerun_canary
    if (
        observation.flaky_counts_as == "passed"
        and canary is not None
        and canary.outcome == "failed"
    ):
        return Score(
            outcome=Outcome.RESOLVED,
            reason="tests_passed_on_rerun",
            detail=detail,
            resolution=resolution,
        )
    return Score(
        outcome=Outcome.UNRESOLVED, reason="tests_flaky", detail=detail, resolution=resolution
    )
