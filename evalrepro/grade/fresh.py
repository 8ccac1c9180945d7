"""Fresh runs: ground truth read from outside the process under test.

The trial's log is written by the runner, in the process that runs the code under test:
whatever that code does to the runner's report (its hooks, its summary, its output)
reaches the log. With ``protection.fresh_runs: N``, after the run the supervisor also
runs up to N of the instance's FAIL_TO_PASS tests (drawn per trial) each alone, in a
fresh process it starts itself, and one must-fail canary alone the same way, in an order
drawn per trial. Each is judged by its exit status, which the supervisor reads from the
kernel, and the exit guard's word on whether the runner shut down normally; its output
is not read. A FAIL_TO_PASS test the log calls passing whose fresh run fails makes the
trial invalid (``fresh_disagrees``); a must-fail canary whose fresh run passes makes it
``runner_tampered``.

What it adds to the canaries: a forgery of the report (a reporting hook, a rewritten
summary, output printed over the runner's) does not change an exit status, and a
forgery of the exit status for every process (``os._exit(0)`` at exit, an ``atexit``
hook) fails the lone canary. What it cannot see: code that reads which test it was asked
to run (``sys.argv``), knows the instance's FAIL_TO_PASS names, and exits 0 for those
only. It costs one runner start per fresh run (benchmarks/fresh_runs.py).

How a runner selects one test and what its exit status says are the runner's own rules,
one :class:`Runner` per runner, keyed by the parser's ``runner`` attribute. The second
runner's runs (``evalrepro.run.undertest``) are fresh runs too, with the ``plain``
runner's rules, judged as ``FreshCheck.differs_under_test``.
"""

from __future__ import annotations

import random
import re
import secrets
import shlex
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import ClassVar

from evalrepro.grade.parsers import LogParser
from evalrepro.records.canary import Canary
from evalrepro.records.fresh import FreshCheck, FreshOutcome, FreshResult, FreshRun
from evalrepro.records.testspec import TestSpec
from evalrepro.sample import Sample

_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+")


class Runner(ABC):
    """How one test runner selects a single test, and what its exit status says."""

    name: ClassVar[str]

    @abstractmethod
    def select(self, test: str) -> str | None:
        """The argument that selects the test a status-map key names, or None."""

    @abstractmethod
    def canary(self, canary: Canary, directives: Sequence[str]) -> str | None:
        """The argument that selects a placed canary, or None."""

    def outcome(self, exit_code: int, runner_exit: str = "clean") -> FreshOutcome:
        """What the exit status says; ``runner_exit``: the exit guard's word on the end."""
        return "passed" if exit_code == 0 else "failed"


class PytestRunner(Runner):
    """Node ids (``path::name``, ``path::Class::name[param]``); pytest's exit codes: 0 all
    passed, 1 some failed, 2 interrupted, 3 internal error, 4 usage error (no such node),
    5 nothing collected."""

    name: ClassVar[str] = "pytest"

    def select(self, test: str) -> str | None:
        path = test.split("::", 1)[0]
        return test if "::" in test and path.endswith(".py") else None

    def canary(self, canary: Canary, directives: Sequence[str]) -> str | None:
        if canary.style == "function":
            return f"{canary.file}::{canary.name}"
        cls = _class_of(canary)
        return f"{canary.file}::{cls}::{canary.name}" if cls else None

    def outcome(self, exit_code: int, runner_exit: str = "clean") -> FreshOutcome:
        return {0: "passed", 4: "unselected", 5: "unselected"}.get(exit_code, "failed")


class UnittestRunner(Runner):
    """Test ids (``pkg.mod.Class.test_x``; a subtest's id selects its test) as labels of
    ``python -m unittest`` or Django's runner; exit 5 (Python 3.12+): no tests ran."""

    name: ClassVar[str] = "unittest"

    def select(self, test: str) -> str | None:
        label = test.split(" (", 1)[0]
        return label if _DOTTED.fullmatch(label) else None

    def canary(self, canary: Canary, directives: Sequence[str]) -> str | None:
        if canary.style != "method":
            return None
        dotted = canary.file.removesuffix(".py").replace("/", ".")
        # The module as the command names it: the directive it was placed for (Django's
        # labels are relative to its tests folder), else the path from the repository.
        module = next(
            (d for d in directives if _DOTTED.fullmatch(d) and dotted.endswith(f".{d}")), dotted
        )
        cls = _class_of(canary)
        return f"{module}.{cls}.{canary.name}" if cls else None

    def outcome(self, exit_code: int, runner_exit: str = "clean") -> FreshOutcome:
        return {0: "passed", 5: "unselected"}.get(exit_code, "failed")


class DjangoRunner(UnittestRunner):
    """SWE-bench's Django keys: ``test_x (app.tests.Class)`` or (Python 3.11+)
    ``test_x (app.tests.Class.test_x)``; the label is the dotted id."""

    name: ClassVar[str] = "django"

    def select(self, test: str) -> str | None:
        match = re.fullmatch(r"(\w+) \(([\w.]+)\)", test)
        if match is None:
            return None
        method, where = match.groups()
        label = where if where.endswith(f".{method}") else f"{where}.{method}"
        return label if _DOTTED.fullmatch(label) else None


class PlainRunner(Runner):
    """The second runner (``evalrepro/sandbox/plain.py``): a plain driver that runs
    one test without its framework. It exits 0 if the test passed, 1 if it failed, and 3
    when the test does not allow a plain run, decided before the exit guard (and any code
    of the repository) is loaded: an exit 3 the guard saw a runner make is a failure."""

    name: ClassVar[str] = "plain"

    def select(self, test: str) -> str | None:
        return None  # planned by evalrepro.run.undertest from the first runner's selection

    def canary(self, canary: Canary, directives: Sequence[str]) -> str | None:
        return None

    def outcome(self, exit_code: int, runner_exit: str = "clean") -> FreshOutcome:
        if exit_code == 3 and runner_exit == "unknown":
            return "unselected"
        return "passed" if exit_code == 0 else "failed"


def _class_of(canary: Canary) -> str | None:
    """The class of a method canary: its neighbour's, or the one it defines."""
    if canary.test_class is not None:
        return canary.test_class
    return canary.defines[1] if len(canary.defines) > 1 else None


RUNNERS: dict[str, Runner] = {
    r.name: r for r in (PytestRunner(), UnittestRunner(), DjangoRunner(), PlainRunner())
}


def draw_fresh_runs(
    spec: TestSpec,
    parser: LogParser,
    sample: Sample,
    canaries: Sequence[Canary],
    rng: random.Random | None = None,
) -> tuple[list[FreshRun], str]:
    """The trial's fresh runs, and why there are none when the dataset asked for some."""
    wanted = spec.eval_script.protection.fresh_runs
    if wanted == 0:
        return [], ""
    runner = RUNNERS.get(parser.runner or "")
    if runner is None:
        return [], f"parser {parser.name} names no runner that can select one test"
    rng = rng or random.SystemRandom(secrets.randbits(64))
    canary = lone_canary(runner, canaries, spec)
    if canary is None:
        # Without a must-fail canary beside them, a process that always exits 0 would pass.
        return [], "no must-fail canary to run alone beside the FAIL_TO_PASS tests"
    selectable = [(test, arg) for test in sample.fail_to_pass if (arg := runner.select(test))]
    if not selectable:
        return [], f"no FAIL_TO_PASS test is named in a form the {runner.name} runner selects"
    chosen = rng.sample(selectable, min(wanted, len(selectable)))
    runs = [alone(spec.test_cmd, runner, test, arg) for test, arg in chosen]
    runs.append(canary)
    rng.shuffle(runs)  # the canary's place among them is not known in advance
    return runs, ""


def lone_canary(runner: Runner, canaries: Sequence[Canary], spec: TestSpec) -> FreshRun | None:
    """The first must-fail canary the runner can select, as a run of its own."""
    for candidate in canaries:
        if candidate.expect != "fail" or candidate.twin_of is not None:
            continue  # a twin is judged beside its original, never alone
        argument = runner.canary(candidate, spec.test_directives)
        if argument is not None:
            return alone(spec.test_cmd, runner, candidate.name, argument, expect="fail")
    return None


def alone(
    test_command: str, runner: Runner, test: str, argument: str, expect: str = "pass"
) -> FreshRun:
    """The run of one test alone: the test command with only ``argument`` selected."""
    return FreshRun(
        test=test,
        expect=expect,  # type: ignore[arg-type]
        command=f"{test_command} {shlex.quote(argument)}",
        runner=runner.name,
    )


def check_fresh(
    runs: Sequence[FreshRun], results: Sequence[FreshResult], statuses: Mapping[str, str]
) -> list[FreshCheck]:
    """Each fresh run judged: its outcome by its runner's rules, beside the log's status."""
    # A test may run alone under its runner and under the second runner: results are
    # told apart by runner (a report of an older supervisor names none).
    ended = {(result.test, result.runner): result for result in results}
    checks = []
    for run in runs:
        result = ended.get((run.test, run.runner)) or ended.get((run.test, ""))
        checks.append(
            FreshCheck(
                test=run.test,
                expect=run.expect,
                outcome=fresh_outcome(run, result),
                runner=run.runner,
                exit_code=result.exit_code if result is not None else None,
                logged=statuses.get(run.test, "absent") if run.expect == "pass" else "",
            )
        )
    return checks


def fresh_outcome(run: FreshRun, result: FreshResult | None) -> FreshOutcome:
    """How a run alone ended, by its runner's rules."""
    if result is None or result.exit_code is None:
        return "not_run"
    if result.stopped is not None:
        return "stopped"
    if result.exit_code == 0 and result.runner_exit == "abnormal":
        return "abnormal"  # a success without the runner's normal shutdown
    return RUNNERS[run.runner].outcome(result.exit_code, result.runner_exit)
