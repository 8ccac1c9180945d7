"""Re-runs of failing tests (``environment.rerun_failed``): what is planned, what the host
asks the supervisor to re-run from the run's log, how each re-run is judged, and how a
flaky test is scored under each policy. The runs themselves, in containers, are in
tests/adversarial/test_reruns.py.
"""

from __future__ import annotations

import os
import random
import shlex
import threading

import pytest

from evalrepro.grade.canary import draw_canaries
from evalrepro.grade.parsers.registry import get_parser
from evalrepro.grade.rerun import MAX_RERUN_TESTS, check_reruns, plan_reruns, select_reruns
from evalrepro.grade.score import score
from evalrepro.records.fresh import FreshCheck, FreshResult
from evalrepro.records.observation import ExecutionStatus, Observation, ParserStatus
from evalrepro.records.observation import TestGroup as Group
from evalrepro.records.observation import TestsReport as Report
from evalrepro.records.rerun import RerunCheck
from evalrepro.runtimes.fake import FakeTests, pytest_output
from evalrepro.sandbox.phases import read_request
from tests.test_canary import SAMPLES, spec_of

CALC = "demo__calc-1"


def planned(times: int = 2, scope: str = "listed", parser: str = "pytest_full", seed: int = 1):
    sample = SAMPLES[CALC]
    spec = spec_of(sample, parser)
    canaries = draw_canaries(spec, get_parser(parser), sample, random.Random(seed))
    plan, note = plan_reruns(spec, get_parser(parser), sample, canaries, times=times, scope=scope)
    return sample, canaries, plan, note


def log(passed=(), failed=()) -> str:
    return pytest_output(FakeTests(passed=tuple(passed), failed=tuple(failed))).decode()


# --- the plan -------------------------------------------------------------------------


def test_no_plan_unless_reruns_are_asked_for():
    assert planned(times=0)[2:] == (None, "")


def test_the_plan_lists_the_tests_the_host_may_ask_for_and_a_lone_must_fail_canary():
    sample, canaries, plan, note = planned()
    assert note == "" and plan is not None
    assert (plan.fail_to_pass, plan.pass_to_pass) == (sample.fail_to_pass, sample.pass_to_pass)
    assert plan.canary is not None and plan.canary.expect == "fail"
    assert plan.canary.test in {c.name for c in canaries if c.expect == "fail"}
    assert plan.flaky_counts_as == "failed"


def test_no_plan_and_a_note_where_one_test_cannot_be_selected():
    assert planned(parser="tap_full")[2] is None
    assert "names no runner" in planned(parser="tap_full")[3]


# --- what the host asks for -----------------------------------------------------------


def test_only_the_failing_listed_tests_are_asked_for_with_the_canary_among_them():
    sample, canaries, plan, _ = planned()
    f2p, p2p = sample.fail_to_pass, sample.pass_to_pass
    region = log(passed=[*f2p[1:], *p2p[1:], "tests/test_other.py::test_unlisted"],
                 failed=[f2p[0], p2p[0], "tests/test_other.py::test_unlisted_failing"])  # fmt: skip
    runs = select_reruns(plan, canaries, region, random.Random(0))
    assert [r.test for r in runs if r.expect == "pass"] == [f2p[0], p2p[0]]
    assert [r.test for r in runs if r.expect == "fail"] == [plan.canary.test]
    for run in runs:
        assert run.command.startswith(plan.test_command + " ")


def test_the_canarys_place_among_the_reruns_is_drawn_per_trial():
    sample, canaries, plan, _ = planned()
    region = log(failed=sample.fail_to_pass)
    places = {
        [r.expect for r in select_reruns(plan, canaries, region, random.Random(seed))].index("fail")
        for seed in range(30)
    }
    assert len(places) > 1


def test_nothing_is_asked_for_when_nothing_failed_or_there_is_no_output():
    sample, canaries, plan, _ = planned()
    everything = log(passed=[*sample.fail_to_pass, *sample.pass_to_pass])
    assert select_reruns(plan, canaries, everything) == []
    assert select_reruns(plan, canaries, None) == []


def test_an_absent_listed_test_is_failing_and_asked_for():
    sample, canaries, plan, _ = planned()
    region = log(passed=sample.pass_to_pass)  # no FAIL_TO_PASS test in the log at all
    asked = {r.test for r in select_reruns(plan, canaries, region) if r.expect == "pass"}
    assert asked == set(sample.fail_to_pass)


def test_at_most_a_bounded_number_of_tests_is_re_run():
    _, canaries, plan, _ = planned(scope="failing")
    many = [f"tests/test_many.py::test_{i}" for i in range(MAX_RERUN_TESTS + 20)]
    runs = select_reruns(plan, canaries, log(failed=many))
    assert len([r for r in runs if r.expect == "pass"]) == MAX_RERUN_TESTS


def test_validation_scope_asks_for_every_failing_test_of_the_log_but_no_canary_of_its_own():
    _, canaries, plan, _ = planned(scope="failing")
    keys = [f"{c.file}::{c.name}" for c in canaries if c.style == "function"]
    region = log(passed=["tests/test_a.py::test_ok"], failed=["tests/test_a.py::test_bad", *keys])
    asked = [r.test for r in select_reruns(plan, canaries, region) if r.expect == "pass"]
    assert asked == ["tests/test_a.py::test_bad"]


# --- how re-runs are judged -----------------------------------------------------------


def ended(test: str, exit_code: int, runner_exit: str = "clean") -> FreshResult:
    return FreshResult(test=test, exit_code=exit_code, signal=None, seconds=0.1,
                       runner_exit=runner_exit)  # fmt: skip


def test_each_failing_test_gets_its_reruns_outcomes_and_nothing_else_counts():
    sample, _, plan, _ = planned(times=2)
    f2p, p2p = sample.fail_to_pass, sample.pass_to_pass
    statuses = {f2p[0]: "FAILED", p2p[0]: "FAILED", **{t: "PASSED" for t in [*f2p[1:], *p2p[1:]]}}
    results = [
        ended(f2p[0], 1),
        ended(f2p[0], 0),  # flaky: passed on its second re-run
        ended(p2p[0], 1),
        ended(p2p[0], 1),
        ended(p2p[0], 0),  # beyond the plan's times: not counted
        ended(p2p[1], 0),  # not failing in the run: not counted
        ended(plan.canary.test, 1),
    ]
    checks, canary = check_reruns(plan, results, statuses)
    assert [(c.test, c.group, c.outcomes) for c in checks] == [
        (f2p[0], "fail_to_pass", ["failed", "passed"]),
        (p2p[0], "pass_to_pass", ["failed", "failed"]),
    ]
    assert [c.flaky for c in checks] == [True, False]
    assert canary is not None and canary.outcome == "failed" and not canary.tampered


def test_a_success_without_the_runners_normal_shutdown_does_not_make_a_test_flaky():
    sample, _, plan, _ = planned()
    statuses = {sample.fail_to_pass[0]: "FAILED"}
    checks, _ = check_reruns(plan, [ended(sample.fail_to_pass[0], 0, "abnormal")], statuses)
    assert checks[0].outcomes[0] == "abnormal" and not checks[0].flaky


# --- how a flaky test is scored ---------------------------------------------------------


def observation(failing: list[str], reruns: list[RerunCheck], *, counts_as="failed",
                canary: str | None = "failed") -> Observation:  # fmt: skip
    return Observation(
        instance_id="x",
        source="supervisor",
        parser="pytest_full",
        parser_status=ParserStatus.OK,
        execution_status=ExecutionStatus.COMPLETED,
        test_exit_code=1,
        status_map={t: "FAILED" for t in failing},
        tests=Report(
            fail_to_pass=Group(success=["ok"], failure=failing),
            pass_to_pass=Group(success=[], failure=[]),
        ),
        rerun_times=2,
        reruns=reruns,
        rerun_canary=None
        if canary is None
        else FreshCheck(test="canary", expect="fail", outcome=canary, exit_code=0),
        flaky_counts_as=counts_as,
    )


FLAKY = RerunCheck(test="a", group="fail_to_pass", outcomes=["failed", "passed"])
STABLE = RerunCheck(test="b", group="fail_to_pass", outcomes=["failed", "failed"])


def test_by_default_a_flaky_test_counts_as_failed_and_the_reason_says_so():
    found = score(observation(["a"], [FLAKY]))
    assert (found.outcome, found.reason) == ("unresolved", "tests_flaky")
    assert "passed alone when re-run: a" in found.detail


def test_a_stable_failure_fails_the_trial_whatever_the_policy():
    found = score(observation(["a", "b"], [FLAKY, STABLE], counts_as="passed"))
    assert (found.outcome, found.reason) == ("unresolved", "tests_failed")


def test_a_lenient_policy_resolves_a_trial_whose_every_failing_test_passed_alone():
    found = score(observation(["a"], [FLAKY], counts_as="passed"))
    assert (found.outcome, found.reason) == ("resolved", "tests_passed_on_rerun")


def test_a_lenient_policy_needs_the_lone_canary_to_have_failed():
    assert score(observation(["a"], [FLAKY], counts_as="passed", canary=None)).reason == (
        "tests_flaky"
    )
    assert score(observation(["a"], [FLAKY], counts_as="passed", canary="unselected")).reason == (
        "tests_flaky"
    )


@pytest.mark.parametrize("canary", ["passed", "abnormal"])
def test_a_lone_canary_that_exits_as_passed_among_the_reruns_is_tampering(canary):
    found = score(observation(["a"], [FLAKY], canary=canary))
    assert (found.outcome, found.reason) == ("invalid", "runner_tampered")


# --- the supervisor's side of the request ------------------------------------------------


def pipe_with(data: bytes | None) -> int:
    read, write = os.pipe()
    if data is not None:
        threading.Thread(target=lambda: (os.write(write, data), os.close(write))).start()
    return read


def test_the_supervisor_reads_the_hosts_list_of_runs():
    request = b'[{"test": "t", "expect": "pass", "command": "pytest t", "runner": "pytest"}]\n'
    assert read_request(pipe_with(request), 5) == [
        {"test": "t", "expect": "pass", "command": "pytest t", "runner": "pytest"}
    ]


@pytest.mark.parametrize(
    "data", [b"", b"not json", b'{"test": "t"}', b'[{"test": 1, "expect": "pass"}]']
)
def test_anything_but_a_list_of_runs_is_no_word_from_the_host(data):
    assert read_request(pipe_with(data), 5) is None


def test_no_word_in_time_is_no_word():
    assert read_request(pipe_with(None), 0.2) is None


def test_a_test_name_the_log_makes_up_reaches_the_runner_as_one_quoted_argument():
    # Validation re-runs names the log gives, and the log is written by the code under
    # test: a name is one shell word, whatever it holds, and an overlong one is not re-run.
    _, canaries, plan, _ = planned(scope="failing")
    hostile = "tests/test_a.py::t; touch /tmp/pwned $(id) `id`"
    overlong = "tests/test_a.py::" + "x" * 2000
    runs = select_reruns(plan, canaries, log(failed=[hostile, overlong]))
    (run,) = [r for r in runs if r.expect == "pass"]
    assert run.test == hostile
    assert shlex.split(run.command)[-1] == hostile
    assert run.command.endswith(shlex.quote(hostile))
