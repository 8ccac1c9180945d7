"""Fresh runs: FAIL_TO_PASS tests and a must-fail canary, each run alone in a process of
its own after the trial's run, judged by exit status alone.

Drawn per trial only where the runner can select one test; each runner's own rules read
its exit status. The runs here are real pytest and unittest runs of the demo repositories
(no container): an honest fix passes alone too, a fix that holds only in the company of
other tests disagrees with its log, and a process that exits 0 whatever happens passes
the lone must-fail canary and is caught.
"""

from __future__ import annotations

import random
import shlex
import subprocess
from pathlib import Path

import pytest

from evalrepro.config.protection import TestProtection
from evalrepro.grade.canary import draw_canaries
from evalrepro.grade.fresh import RUNNERS, check_fresh, draw_fresh_runs
from evalrepro.grade.parsers.registry import get_parser
from evalrepro.records.fresh import FreshCheck, FreshResult, FreshRun
from tests.test_canary import SAMPLES, _tree, place_canaries, run_on_host, runner_env, spec_of


def plan(instance: str, parser: str, fresh_runs: int = 2, seed: int = 3, **options):
    sample = SAMPLES[instance]
    spec = spec_of(sample, parser, **options)
    protection = spec.eval_script.protection.model_copy(update={"fresh_runs": fresh_runs})
    spec = spec.model_copy(
        update={"eval_script": spec.eval_script.model_copy(update={"protection": protection})}
    )
    canaries = draw_canaries(spec, get_parser(parser), sample, random.Random(seed))
    runs, note = draw_fresh_runs(spec, get_parser(parser), sample, canaries, random.Random(seed))
    return sample, spec, canaries, runs, note


# --- what is drawn ------------------------------------------------------------------------


def test_fresh_runs_are_off_unless_the_dataset_asks_for_them():
    assert TestProtection().fresh_runs == 0
    assert plan("demo__calc-1", "pytest_full", fresh_runs=0)[3:] == ([], "")


def test_a_trial_runs_its_fail_to_pass_tests_and_one_must_fail_canary_alone():
    sample, spec, canaries, runs, note = plan("demo__ledger-1", "unittest", fresh_runs=5)
    assert note == ""
    assert sorted(r.test for r in runs if r.expect == "pass") == sorted(sample.fail_to_pass)
    (lone,) = [r for r in runs if r.expect == "fail"]
    assert lone.test in {c.name for c in canaries if c.expect == "fail"}
    for run in runs:
        # The spec's command with one test selected, in place of its directives.
        assert run.command.startswith(spec.test_cmd + " ")
        assert len(shlex.split(run.command)) == len(shlex.split(spec.test_cmd)) + 1


def test_at_most_the_asked_number_of_tests_is_drawn_and_the_draw_differs_by_trial():
    drawn = {
        tuple(sorted(r.test for r in plan("demo__ledger-1", "unittest", 1, seed)[3]))
        for seed in range(20)
    }
    assert all(len(d) == 2 for d in drawn)  # one test and the canary
    assert len(drawn) > 1


def test_the_canarys_place_among_the_runs_is_drawn_per_trial():
    places = {
        [r.expect for r in plan("demo__ledger-1", "unittest", 5, seed)[3]].index("fail")
        for seed in range(30)
    }
    assert len(places) > 1


def test_no_fresh_runs_and_a_note_where_they_cannot_be_judged():
    # A runner that cannot select one test; no must-fail canary to keep them honest.
    assert plan("demo__calc-1", "tap_full")[3:] == (
        [],
        "parser tap_full names no runner that can select one test",
    )
    runs, note = plan("demo__calc-1", "pytest_full", canaries=False)[3:]
    assert runs == [] and "no must-fail canary" in note


# --- each runner's rules --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("runner", "key", "argument"),
    [
        ("pytest", "tests/test_a.py::test_x[1 + 2-3.0]", "tests/test_a.py::test_x[1 + 2-3.0]"),
        ("pytest", "tests/test_a.py::TestA::test_x", "tests/test_a.py::TestA::test_x"),
        ("pytest", "test_x", None),
        ("unittest", "tests.test_a.TestA.test_x", "tests.test_a.TestA.test_x"),
        ("unittest", "tests.test_a.TestA.test_x (i=1)", "tests.test_a.TestA.test_x"),
        ("unittest", "unittest.loader._FailedTest.tests", "unittest.loader._FailedTest.tests"),
        ("unittest", "not a test id", None),
        ("django", "test_x (app.tests.TestA)", "app.tests.TestA.test_x"),
        ("django", "test_x (app.tests.TestA.test_x)", "app.tests.TestA.test_x"),
        ("django", "test_x (app.tests.TestA) (i=1)", None),
    ],
)
def test_a_runner_selects_one_test_by_its_status_map_key(runner, key, argument):
    assert RUNNERS[runner].select(key) == argument


@pytest.mark.parametrize(
    ("runner", "exits"),
    [
        ("pytest", {0: "passed", 1: "failed", 2: "failed", 3: "failed", 4: "unselected"}),
        ("pytest", {5: "unselected", 137: "failed"}),
        ("unittest", {0: "passed", 1: "failed", 5: "unselected"}),
    ],
)
def test_a_runner_reads_its_own_exit_codes(runner, exits):
    assert {code: RUNNERS[runner].outcome(code) for code in exits} == exits


# --- how the supervisor's results are judged ------------------------------------------------


def _judged(expect: str, logged: str, **ended) -> FreshCheck:
    run = FreshRun(test="t::a", expect=expect, command="pytest t::a", runner="pytest")
    facts = {"exit_code": 0, "signal": None, "seconds": 0.1, "runner_exit": "clean"} | ended
    results = [FreshResult(test="t::a", **facts)] if ended.get("exit_code", 0) is not None else []
    (check,) = check_fresh([run], results, {"t::a": logged} if logged else {})
    return check


def test_a_fail_to_pass_test_passing_in_the_log_and_failing_alone_disagrees():
    assert _judged("pass", "PASSED", exit_code=1).disagrees
    assert _judged("pass", "PASSED", exit_code=1, stopped="timeout").disagrees
    assert not _judged("pass", "PASSED", exit_code=0).disagrees
    # A failure in the log is already a failure; "no such test" is no judgement.
    assert not _judged("pass", "FAILED", exit_code=1).disagrees
    assert not _judged("pass", "PASSED", exit_code=5).disagrees
    assert not _judged("pass", "PASSED", exit_code=None).disagrees


def test_a_success_without_the_runners_normal_shutdown_is_not_a_pass():
    check = _judged("pass", "PASSED", exit_code=0, runner_exit="abnormal")
    assert check.outcome == "abnormal" and check.disagrees


def test_a_must_fail_canary_exiting_as_passed_alone_is_tampering():
    assert _judged("fail", "", exit_code=0).tampered
    assert _judged("fail", "", exit_code=0, runner_exit="abnormal").tampered
    assert not _judged("fail", "", exit_code=1).tampered


# --- real runners ---------------------------------------------------------------------------

#: Library code that leaves every Python process with status 0, whatever its tests did.
EXITS_ZERO = "import atexit, os\natexit.register(lambda: os._exit(0))\n"
#: The gold fix of demo__calc-1, in force only after the first calls of a process: the
#: instance's test passes after the file's other tests ran, and fails alone.
#: calc's power before the fix (left-associative), as the body of an ``if`` in a method.
UNFIXED_POWER = (
    "        value = self.atom()\n"
    "        while self.peek().text == '^':\n"
    "            self.take()\n"
    "            value = value ** self.atom()\n"
    "        return value\n"
)
IN_COMPANY_ONLY = (
    "\n_calls = [0]\n_right = _Parser.power\n\n\n"
    "def _power(self):\n"
    "    _calls[0] += 1\n"
    "    if _calls[0] < 8:\n" + UNFIXED_POWER + "    return _right(self)\n\n\n"
    "_Parser.power = _power\n"
)


def _fresh_run(
    tmp_path: Path,
    instance: str,
    parser: str,
    *,
    gold: bool = True,
    append: dict[str, str] | None = None,
    tamper: str | None = None,
) -> tuple[list[FreshCheck], subprocess.CompletedProcess, dict[str, str]]:
    """The trial's own run and then its fresh runs, with the supervisor's placement of the
    canaries; the fresh runs judged against the log of the trial's run, and their output."""
    sample, spec, canaries, runs, note = plan(instance, parser, fresh_runs=5)
    assert note == ""
    tree = _tree(tmp_path, sample)
    if gold:
        subprocess.run(["git", "apply", "-"], cwd=tree, input=sample.patch.encode(), check=True)
    for path, text in (append or {}).items():
        with open(tree / path, "a") as handle:
            handle.write(text)
    assert place_canaries(tree, canaries)
    env = runner_env(tmp_path, tamper)

    def run(command: str) -> subprocess.CompletedProcess:
        return run_on_host(command, tree, env)

    whole = run(spec.eval_script.test_command)
    parsed = get_parser(parser).parse(whole.stdout + whole.stderr)
    statuses = {test: str(status) for test, status in parsed.statuses.items()}
    results, outputs = [], {}
    for fresh in runs:
        done = run(fresh.command)
        outputs[fresh.test] = done.stdout + done.stderr
        results.append(
            FreshResult(
                test=fresh.test,
                exit_code=done.returncode,
                signal=None,
                seconds=0.0,
                runner_exit="clean",
            )
        )
    return check_fresh(runs, results, statuses), whole, outputs


@pytest.mark.parametrize(
    ("instance", "parser"), [("demo__calc-1", "pytest_full"), ("demo__ledger-1", "unittest")]
)
def test_an_honest_fix_passes_alone_and_the_lone_canary_fails(tmp_path, instance, parser):
    checks, whole, outputs = _fresh_run(tmp_path, instance, parser)
    log = whole.stdout + whole.stderr
    assert {c.outcome for c in checks if c.expect == "pass"} == {"passed"}, log
    assert {c.outcome for c in checks if c.expect == "fail"} == {"failed"}, log
    assert not any(c.disagrees or c.tampered for c in checks)
    # Each ran exactly the one test it names: the canary failed its own assertion.
    (lone,) = [c for c in checks if c.expect == "fail"]
    parsed = get_parser(parser).parse(outputs[lone.test]).statuses
    assert [str(s) for k, s in parsed.items() if lone.test in k] == ["FAILED"], outputs
    assert len(parsed) == 1, outputs[lone.test]


def test_without_the_fix_the_tests_fail_alone_as_in_the_log(tmp_path):
    checks, _, _ = _fresh_run(tmp_path, "demo__ledger-1", "unittest", gold=False)
    tests = [c for c in checks if c.expect == "pass"]
    assert {(c.logged, c.outcome) for c in tests} == {("FAILED", "failed")}
    assert not any(c.disagrees or c.tampered for c in checks)


def test_a_fix_that_holds_only_in_the_company_of_other_tests_disagrees(tmp_path):
    checks, whole, _ = _fresh_run(
        tmp_path, "demo__calc-1", "pytest_full", append={"calc/evaluator.py": IN_COMPANY_ONLY}
    )
    (test,) = [c for c in checks if c.expect == "pass"]
    assert (test.logged, test.outcome) == ("PASSED", "failed"), whole.stdout
    assert test.disagrees


@pytest.mark.parametrize(
    ("instance", "parser"), [("demo__calc-1", "pytest_full"), ("demo__ledger-1", "unittest")]
)
def test_a_process_that_exits_zero_whatever_happens_passes_the_lone_canary(
    tmp_path, instance, parser
):
    checks, _, _ = _fresh_run(tmp_path, instance, parser, gold=False, tamper=EXITS_ZERO)
    assert [c.tampered for c in checks if c.expect == "fail"] == [True]
