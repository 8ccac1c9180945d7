"""Re-runs of failing tests in containers (``environment.rerun_failed``): after the run, each
FAIL_TO_PASS / PASS_TO_PASS test that failed is run again alone, in the same sandbox, and
judged by the exit status the supervisor reads from outside the process.

A fix that holds only for the first test of a process (state the code under test keeps:
its tests fail in the run and pass alone) is flagged flaky and, by default, not resolved;
a stable failure stays failed after every re-run; library code that makes the runner exit
0 whatever happened passes every re-run and the lone must-fail canary among them:
``runner_tampered``. With ``flaky_counts_as=passed`` the flaky fix resolves, the
tampering still does not. Every gold patch resolves without a re-run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from evalrepro.publish.verify import check_run
from tests.adversarial.attacks import Attack
from tests.adversarial.test_fresh_runs import EXIT_ZERO_BUILTIN
from tests.adversarial.test_inodes import SmallRun, run_small
from tests.podman_support import needs_podman
from tests.test_fresh import UNFIXED_POWER

pytestmark = needs_podman

#: Appended after the gold fix of demo__calc-1: the fix holds for the first test that
#: evaluates an expression in this process, and is undone for every later one.
FIX_FOR_ONE_TEST = (
    "\nimport sys as _sys\n"
    "_seen = set()\n_right = _Parser.power\n\n\n"
    "def _power(self):\n"
    "    frame = _sys._getframe(1)\n"
    "    while frame is not None and not frame.f_code.co_name.startswith('test_'):\n"
    "        frame = frame.f_back\n"
    "    if frame is not None:\n"
    "        _seen.add(frame.f_code.co_name)\n"
    "    if len(_seen) > 1:\n" + UNFIXED_POWER + "    return _right(self)\n\n\n"
    "_Parser.power = _power\n"
)

#: Every expression evaluates to 0: a stable failure of most of calc's tests.
BREAKS_EVERYTHING = "\n_Parser.power = lambda self: 0.0\n"


def attacks(counts_as: str) -> tuple[Attack, ...]:
    lenient = counts_as == "passed"
    return (
        Attack(
            "fix-for-one-test",
            "runner",
            "demo__calc-1",
            "the fix holds for the first test of a process only: fails in the run, passes alone",
            ("resolved", "tests_passed_on_rerun") if lenient else ("unresolved", "tests_flaky"),
            {"calc/evaluator.py": FIX_FOR_ONE_TEST},
            with_gold=True,
        ),
        Attack(
            "exit-zero-builtin",
            "runner",
            "demo__ledger-1",
            "sys.exit replaced by the built-in int: every re-run exits 0, the lone canary too",
            ("invalid", "runner_tampered"),
            {"ledger/storage.py": EXIT_ZERO_BUILTIN},
        ),
        *(
            []
            if lenient
            else [
                Attack(
                    "breaks-everything",
                    "control",
                    "demo__calc-2",
                    "every expression is 0: the failures are stable, alone as in the run",
                    ("unresolved", "tests_failed"),
                    {"calc/evaluator.py": BREAKS_EVERYTHING},
                )
            ]
        ),
    )


@pytest.fixture(scope="module")
def strict_run(tmp_path_factory) -> SmallRun:
    return run_small(
        tmp_path_factory.mktemp("reruns"), attacks("failed"), "environment.rerun_failed=2"
    )


def test_flaky_tests_are_flagged_stable_failures_stay_failed_and_tampering_is_caught(
    strict_run,
):
    assert strict_run.wrong() == []
    assert strict_run.complete()
    assert strict_run.gold_outcomes() == {"resolved"}

    flaky = strict_run.result("fix-for-one-test").attempts[-1].observation
    assert flaky.rerun_times == 2 and flaky.flaky_tests
    for check in flaky.reruns:
        # One re-run was enough: the first that passes ends a test's re-runs.
        assert check.outcomes == ["passed"], check
    assert flaky.rerun_canary is not None and flaky.rerun_canary.outcome == "failed"

    stable = strict_run.result("breaks-everything").attempts[-1].observation
    assert stable.reruns and not stable.flaky_tests
    for check in stable.reruns:
        assert check.outcomes == ["failed", "failed"], check

    tampered = strict_run.result("exit-zero-builtin")
    assert "exited 0 alone" in tampered.score.detail


def test_the_supervisor_ran_what_the_host_asked_and_nothing_for_a_passing_trial(strict_run):
    report = strict_run.supervisor_json("fix-for-one-test")["rerun"]
    observation = strict_run.result("fix-for-one-test").attempts[-1].observation
    # Each failing test once (it passed), and the canary once.
    assert report["asked"] == len(observation.reruns) + 1 == len(report["runs"])
    for (_, index), result in strict_run.results().items():
        if index == strict_run.samples - 1:  # the gold patches: nothing failed
            assert result.attempts[-1].observation.reruns == []
    # verify re-observes every trial from its artifacts, the re-runs' checks included.
    assert check_run(strict_run.run_dir).ok


def test_the_run_report_counts_the_flaky_trials_and_the_viewer_shows_each_rerun(strict_run):
    done = subprocess.run(
        [sys.executable, "-m", "evalrepro", "report", str(strict_run.run_dir), "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode in (0, 3), done.stderr
    metrics = json.loads(done.stdout)["metrics"]
    flaky = strict_run.result("fix-for-one-test").attempts[-1].observation.flaky_tests
    assert (metrics["flaky"], metrics["flaky_tests"]) == (1, len(flaky))
    assert metrics["flaky_rate"]["estimate"] == pytest.approx(1 / strict_run.planned)
    subprocess.run(
        [sys.executable, "-m", "evalrepro", "view", str(strict_run.run_dir)],
        capture_output=True, check=True,
    )  # fmt: skip
    pages = [p.read_text() for p in (strict_run.run_dir / "view").rglob("*.html")]
    (page,) = [p for p in pages if "failing tests flaky" in p and "re-runs alone" in p]
    assert "flaky: passed alone on re-run 1 of 1" in page
    assert "counted as failed" in page


@pytest.fixture(scope="module")
def lenient_run(tmp_path_factory) -> SmallRun:
    return run_small(
        tmp_path_factory.mktemp("reruns-lenient"),
        attacks("passed"),
        "environment.rerun_failed=2",
        "environment.flaky_counts_as=passed",
    )


def test_a_lenient_policy_resolves_the_flaky_fix_and_still_catches_tampering(lenient_run):
    assert lenient_run.wrong() == []
    assert lenient_run.gold_outcomes() == {"resolved"}


@pytest.mark.podman
@pytest.mark.xdist_group("podman")
@pytest.mark.root_podman
@pytest.mark.skipif(os.geteuid() != 0, reason="root podman: scripts/test runs this as root")
def test_as_root_the_host_asks_for_the_reruns_the_same_way(tmp_path):
    # Root podman attaches the container's stdin by another path than rootless.
    run = run_small(tmp_path, attacks("failed"), "environment.rerun_failed=2")
    assert run.wrong() == []
    assert run.gold_outcomes() == {"resolved"}
