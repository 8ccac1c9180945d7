"""Fresh runs in containers: the supervisor's lone runs of FAIL_TO_PASS tests and of a
must-fail canary, judged by the exit status it reads from outside the process.

With ``dataset.protection.fresh_runs`` on, a fix that holds only in the company of the
file's other tests (state left by earlier tests: it passes in the run and fails alone) is
``fresh_disagrees``, and library code that makes the runner exit 0 whatever its tests did
(a built-in in place of ``sys.exit``: no code of the repository's for the exit guard
to find, and a normal shutdown) fails the lone must-fail canary: ``runner_tampered``. Every gold
patch still resolves, its fresh runs agreeing with its log.
"""

from __future__ import annotations

import pytest

from evalrepro.sandbox import PROGRAM_PATH
from tests.adversarial.attacks import Attack
from tests.adversarial.test_inodes import run_small
from tests.podman_support import needs_podman
from tests.test_fresh import IN_COMPANY_ONLY

#: ``sys.exit`` replaced by a built-in (names built from pieces): the runner's final
#: ``sys.exit(1)`` does nothing, and the interpreter ends normally with status 0.
EXIT_ZERO_BUILTIN = "\nsetattr(__import__('s' + 'ys'), 'ex' + 'it', int)\n"

#: The gold fix of demo__textkit-3 holds only where the program cannot be read: it names
#: the canaries and the fresh runs, and is the supervisor's alone.
READS_THE_PROGRAM = (
    "\ntry:\n"
    f"    open({PROGRAM_PATH!r}).read()\n"
    "except OSError:\n"
    "    pass\n"
    "else:\n"
    "    raise ImportError('the program was readable')\n"
)

pytestmark = needs_podman

ATTACKS = (
    Attack(
        "fix-in-company-only",
        "runner",
        "demo__calc-1",
        "the fix holds only after the file's other tests ran: it fails alone",
        ("invalid", "fresh_disagrees"),
        {"calc/evaluator.py": IN_COMPANY_ONLY},
        with_gold=True,
    ),
    Attack(
        "exit-zero-builtin",
        "runner",
        "demo__ledger-1",
        "sys.exit replaced by the built-in int: every run of the runner exits 0",
        ("invalid", "runner_tampered"),
        {"ledger/storage.py": EXIT_ZERO_BUILTIN},
    ),
    Attack(
        "program-unreadable",
        "control",
        "demo__textkit-3",
        "the gold fix, in force only if the code under test cannot read the trial's program",
        ("resolved", "tests_passed"),
        {"textkit/wrap.py": READS_THE_PROGRAM},
        with_gold=True,
    ),
)


@pytest.fixture(scope="module")
def fresh_run(tmp_path_factory):
    return run_small(tmp_path_factory.mktemp("fresh"), ATTACKS, "dataset.protection.fresh_runs=3")


def test_the_fresh_runs_catch_what_the_log_does_not_show(fresh_run):
    assert fresh_run.wrong() == []
    assert fresh_run.complete()
    assert fresh_run.gold_outcomes() == {"resolved"}


def test_a_gold_patchs_fresh_runs_agree_with_its_log(fresh_run):
    for (instance, index), result in fresh_run.results().items():
        if index != fresh_run.samples - 1:
            continue
        checks = result.attempts[-1].observation.fresh
        assert {(c.expect, c.outcome) for c in checks} == {
            ("pass", "passed"),
            ("fail", "failed"),
        }, (instance, checks)
