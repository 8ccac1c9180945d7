"""Library code that is right only under the test framework, in containers (issue 35,
part 5): with ``dataset.protection.second_runner`` on, the FAIL_TO_PASS tests are run once
more by a plain driver, without the framework, and a test that passed under its runner
and fails there is ``differs_under_test`` (invalid).

Each patch is written by someone who has read evalrepro: the fix (or the exact reading of
amounts) is in force only where the process shows a sign of its test framework, and the
old behaviour elsewhere. Every sign is a different route to the same end, and none is
one that evalrepro reads: the framework's modules in ``sys.modules``, pytest's own
variable in the environment, the runner's frames on the stack, and unittest's ``__main__``.
The gold patches beside them, and every gold patch of the demo, still resolve, and their
tests pass under the driver too (it ran them: a check that never runs proves nothing).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalrepro.config.experiment import compose
from evalrepro.records.trial import read_trial_result
from tests.adversarial.attacks import Attack
from tests.adversarial.test_inodes import SmallRun, run_small
from tests.podman_support import needs_podman, run_demo
from tests.test_fresh import UNFIXED_POWER

README = (Path(__file__).resolve().parents[2] / "docs" / "threat-model.md").read_text()

pytestmark = needs_podman

SECOND_RUNNER = "dataset.protection.second_runner=3"


def _right_under_test(sign: str) -> str:
    """calc's gold fix (applied first) in force only where ``sign`` holds: elsewhere the
    power operator is left-associative again."""
    return (
        "\nimport os as _os, sys as _sys\n_right = _Parser.power\n\n\n"
        "def _under_test():\n"
        f"    return {sign}\n\n\n"
        "def _power(self):\n"
        "    if not _under_test():\n" + UNFIXED_POWER + "    return _right(self)\n\n\n"
        "_Parser.power = _power\n"
    )


#: Any of the framework's modules loaded (pytest's, or the runner's plugin manager).
FRAMEWORK_LOADED = _right_under_test(
    "any(n.split('.')[0] in ('_pytest', 'pluggy') for n in list(_sys.modules))"
)
#: pytest's own variable, set while a test runs.
PYTEST_VARIABLE = _right_under_test("'PYTEST_CURRENT_TEST' in _os.environ")
#: A caller on the stack whose code is the runner's (pytest's or pluggy's files).
RUNNER_ON_THE_STACK = (
    "\ndef _runner_frames():\n"
    "    frame = _sys._getframe()\n"
    "    while frame is not None:\n"
    "        name = frame.f_code.co_filename.replace('\\\\', '/')\n"
    "        if '/_pytest/' in name or '/pluggy/' in name:\n"
    "            return True\n"
    "        frame = frame.f_back\n"
    "    return False\n"
) + _right_under_test("_runner_frames()")
#: ledger's gold fix (amounts read exactly) in force only when ``python -m unittest`` is
#: the main program: elsewhere the amount goes through a float again.
UNITTEST_MAIN = (
    "\nimport sys as _sys\nfrom decimal import Decimal as _Exact\n\n\n"
    "def Decimal(value='0', *rest):\n"
    "    main = getattr(_sys.modules.get('__main__'), '__spec__', None)\n"
    "    if getattr(main, 'name', '').startswith('unittest') or not isinstance(value, str):\n"
    "        return _Exact(value, *rest)\n"
    "    return _Exact(float(value))\n"
)

ATTACKS = (
    Attack(
        "right-while-pytest-is-loaded",
        "runner",
        "demo__calc-1",
        "the gold fix in force only while `_pytest` or `pluggy` modules are in `sys.modules`",
        ("invalid", "differs_under_test"),
        {"calc/evaluator.py": FRAMEWORK_LOADED},
        with_gold=True,
    ),
    Attack(
        "right-while-a-test-runs",
        "runner",
        "demo__calc-1",
        "the gold fix in force only while `PYTEST_CURRENT_TEST` is set",
        ("invalid", "differs_under_test"),
        {"calc/evaluator.py": PYTEST_VARIABLE},
        with_gold=True,
    ),
    Attack(
        "right-below-the-runner",
        "runner",
        "demo__calc-1",
        "the gold fix in force only with pytest's or pluggy's frames on the stack",
        ("invalid", "differs_under_test"),
        {"calc/evaluator.py": RUNNER_ON_THE_STACK},
        with_gold=True,
    ),
    Attack(
        "right-under-unittests-main",
        "runner",
        "demo__ledger-1",
        "ledger's fix in force only when unittest's `__main__` is the main module",
        ("invalid", "differs_under_test"),
        {"ledger/storage.py": UNITTEST_MAIN},
        with_gold=True,
    ),
)


def test_each_attack_is_in_the_threat_model_with_its_score():
    for attack in ATTACKS:
        outcome, reason = attack.expect
        row = (
            f"| {attack.kind} | `{attack.name}` (`test_under_test.py`, `second_runner: 3`) "
            f"| {attack.what} | {outcome} (`{reason}`) |"
        )
        assert row in README, row


@pytest.fixture(scope="module")
def under_test(tmp_path_factory) -> SmallRun:
    return run_small(tmp_path_factory.mktemp("undertest"), ATTACKS, SECOND_RUNNER)


def test_code_right_only_under_its_framework_differs_under_the_second_runner(under_test):
    assert under_test.wrong() == []
    assert under_test.complete()
    for attack in ATTACKS:
        detail = under_test.result(attack.name).score.detail
        assert "PASSED in the run, failed without its runner" in detail, detail


def test_the_gold_patch_beside_them_resolves_and_passes_under_the_driver(under_test):
    assert under_test.gold_outcomes() == {"resolved"}
    for (_, index), result in under_test.results().items():
        if index != under_test.samples - 1:
            continue
        plain = [c for c in result.attempts[-1].observation.fresh if c.runner == "plain"]
        assert {(c.expect, c.outcome) for c in plain} == {
            ("pass", "passed"),
            ("fail", "failed"),
        }, plain
        # The exit guard saw each driver end: it was loaded after the driver's decision,
        # so an exit 3 ("no plain run") made by code under test reads as a failure.
        attempt = result.attempts[-1]
        path = next(a.path for a in attempt.artifacts if a.path.endswith("/supervisor.json"))
        report = json.loads((under_test.run_dir / path).read_text())
        ends = {r["runner_exit"] for r in report["fresh"]["runs"] if r["runner"] == "plain"}
        assert ends == {"clean"}, report["fresh"]


def test_every_gold_patch_of_the_demo_passes_under_the_driver_too(tmp_path):
    # The honest side, whole: every instance's FAIL_TO_PASS tests (pytest functions that
    # import pytest, unittest methods) run under the driver, pass, and resolve.
    run_demo(compose(["+experiment=demo", SECOND_RUNNER]), tmp_path / "run")
    results = [read_trial_result(p) for p in (tmp_path / "run" / "trials").glob("*/result.json")]
    assert len(results) == 12
    for result in results:
        assert (str(result.score.outcome), result.score.reason) == ("resolved", "tests_passed")
        observation = result.attempts[-1].observation
        plain = [c for c in observation.fresh if c.runner == "plain"]
        tests = [c.outcome for c in plain if c.expect == "pass"]
        assert tests and set(tests) == {"passed"}, (result.instance_id, plain)
        assert [c.outcome for c in plain if c.expect == "fail"] == ["failed"], plain
        assert observation.fresh_note == ""
