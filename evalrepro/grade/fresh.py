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

    def command(self, test_command: str, argument: str, expect: str = "pass") -> str:
        """The test command with only the test ``argument`` names selected (``expect``:
        "fail" for the lone canary, which some runners select more strictly: a selection
        that matches nothing must not read as a canary that passed)."""
        return f"{test_command} {shlex.quote(argument)}"


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


class GoRunner(Runner):
    """``go test <package> -run '^TestX$'`` (a subtest: ``'^TestX$/^sub$'``): the package
    a ``gotest_json`` key names (its import path), a canary's file's folder, or, for a key
    without its package (``gotest``), every package (``./...``). go test exits 0 when
    every selected test passed and also when nothing matched (``[no tests to run]``): a
    FAIL_TO_PASS test the selection misses reads as passed, which never makes a verdict;
    a canary is named exactly in its own package, so it is matched. 1: a test failed; 2:
    a build or usage error."""

    name: ClassVar[str] = "go"

    def select(self, test: str) -> str | None:
        package, _, name = test.rpartition("::")
        if not re.fullmatch(r"Test\w*(/\S+)*", name) or not re.fullmatch(r"[\w./~-]*", package):
            return None
        pattern = "/".join(f"^{re.escape(part)}$" for part in name.split("/"))
        return f"{package or './...'}::{pattern}"

    def canary(self, canary: Canary, directives: Sequence[str]) -> str | None:
        if canary.style != "go_test":
            return None
        folder = canary.file.rpartition("/")[0]
        return f"./{folder}::^{canary.name}$" if folder else f".::^{canary.name}$"

    def command(self, test_command: str, argument: str, expect: str = "pass") -> str:
        package, _, pattern = argument.partition("::")
        return f"{test_command} {shlex.quote(package)} -run {shlex.quote(pattern)}"


class CargoRunner(Runner):
    """``cargo test ... -- --exact <path>`` (libtest's full name: ``tests::adds``;
    ``cargo_json`` keys lose their target, ``demo:src/lib.rs::``); a canary, whose name is
    drawn per trial and unique, by that name alone (its module path is not known to the
    host). 0: the selected tests passed, or none matched (``0 passed``: a miss reads as
    passed, which never makes a verdict); 101: a test failed; other: a build error."""

    name: ClassVar[str] = "cargo"

    def select(self, test: str) -> str | None:
        parts = test.split("::")
        if ":" in parts[0] and len(parts) > 1:
            parts = parts[1:]  # cargo_json's target, "binary:source"
        name = "::".join(parts)
        return name if re.fullmatch(r"[A-Za-z_][\w]*(::[A-Za-z_]\w*)*", name) else None

    def canary(self, canary: Canary, directives: Sequence[str]) -> str | None:
        return canary.name if canary.style == "rust_test" else None

    def command(self, test_command: str, argument: str, expect: str = "pass") -> str:
        try:
            tokens = shlex.split(test_command)
        except ValueError:
            tokens = []
        separator = "" if "--" in tokens else " --"
        exact = " --exact" if expect == "pass" else ""
        return f"{test_command}{separator}{exact} {shlex.quote(argument)}"


class MavenRunner(Runner):
    """``mvn ... -Dtest=Class#method`` (keys ``Class#method`` or JUnit XML's
    ``pkg.Class#method``), with ``-Dmaven.test.failure.ignore=false`` after the command's
    own options (canaries need it true in the run; alone, a failure must fail the build).
    A FAIL_TO_PASS test alone also gets ``-Dsurefire.failIfNoSpecifiedTests=false`` (a
    module without it must not fail the build: a miss reads as passed); a canary does
    not (a miss fails, as a must-fail canary should). 0: BUILD SUCCESS; 1: BUILD
    FAILURE (a test failed, or no test matched, or the build failed)."""

    name: ClassVar[str] = "maven"

    def select(self, test: str) -> str | None:
        cls, hash_, method = test.partition("#")
        method = method.split("(", 1)[0]
        cls = cls.rsplit(".", 1)[-1]
        if not hash_ or not re.fullmatch(r"[A-Za-z_$][\w$]*", cls):
            return None
        return f"{cls}#{method}" if re.fullmatch(r"[A-Za-z_]\w*", method) else None

    def canary(self, canary: Canary, directives: Sequence[str]) -> str | None:
        if canary.style != "junit_method" or canary.test_class is None:
            return None
        return f"{canary.test_class}#{canary.name}"

    def command(self, test_command: str, argument: str, expect: str = "pass") -> str:
        lenient = " -Dsurefire.failIfNoSpecifiedTests=false" if expect == "pass" else ""
        return (
            f"{test_command} -Dtest={shlex.quote(argument)}"
            f" -Dmaven.test.failure.ignore=false{lenient}"
        )


class RspecRunner(Runner):
    """``rspec ... -e '<description>'`` (``rspec_json`` keys ``file::description`` also
    name their file). ``-e`` selects every example whose full description contains the
    text: a FAIL_TO_PASS test whose description is inside another's runs with it (its
    failure then reads as this one's). A canary's title is drawn per trial: it is
    selected alone. 0: all selected passed, or none matched ("0 examples": a miss reads
    as passed, which never makes a verdict); 1: a failure."""

    name: ClassVar[str] = "rspec"

    def select(self, test: str) -> str | None:
        description = test.split("::", 1)[-1] if "::" in test else test
        return description if description.strip() else None

    def canary(self, canary: Canary, directives: Sequence[str]) -> str | None:
        return canary.title if canary.style == "rspec_it" else None

    def command(self, test_command: str, argument: str, expect: str = "pass") -> str:
        return f"{test_command} -e {shlex.quote(argument)}"


class PhpUnitRunner(Runner):
    """``phpunit ... --filter '/\\bClass::method( with data set .*)?$/'`` (JUnit XML keys
    ``Ns.Class#method``; testdox keys, ``Class > Words of the name``, do not give the
    method back: not selected). 0: the selected passed, or none matched ("No tests
    executed!": a miss reads as passed, which never makes a verdict); 1: a failure; 2:
    an error."""

    name: ClassVar[str] = "phpunit"

    def select(self, test: str) -> str | None:
        cls, hash_, method = test.partition("#")
        cls = re.split(r"[.\\]", cls)[-1]
        if not hash_ or not re.fullmatch(r"\w+", cls):
            return None
        method = method.split(" ", 1)[0]
        return f"{cls}::{method}" if re.fullmatch(r"\w+", method) else None

    def canary(self, canary: Canary, directives: Sequence[str]) -> str | None:
        if canary.style != "phpunit_method" or canary.test_class is None:
            return None
        return f"{canary.test_class}::{canary.name}"

    def command(self, test_command: str, argument: str, expect: str = "pass") -> str:
        pattern = f"/\\b{argument}( with data set .*)?$/"
        return f"{test_command} --filter {shlex.quote(pattern)}"


class JestRunner(Runner):
    """``jest ... --testNamePattern '(^| )<title>$'`` (a ``jest_json`` key's ``describe >
    title`` path joined by spaces, as jest matches names; its file is passed too). jest
    exits 1 when nothing ran: a FAIL_TO_PASS test alone gets ``--passWithNoTests`` (a
    miss reads as passed, which never makes a verdict), a canary does not. 0: the
    selected passed; 1: a failure."""

    name: ClassVar[str] = "jest"

    def select(self, test: str) -> str | None:
        path, sep, names = test.partition("::")
        title = (names if sep else path).replace(" > ", " ")
        title = re.sub(r" \[#\d+\]$", "", title)
        return title if title.strip() else None

    def canary(self, canary: Canary, directives: Sequence[str]) -> str | None:
        return canary.title if canary.style in {"js_it", "js_test"} else None

    def command(self, test_command: str, argument: str, expect: str = "pass") -> str:
        pattern = f"(^| ){re.escape(argument)}$"
        lenient = " --passWithNoTests" if expect == "pass" else ""
        return f"{test_command} --testNamePattern {shlex.quote(pattern)}{lenient}"


class VitestRunner(JestRunner):
    """``vitest run ... -t '(^| )<title>$'`` (keys ``file > describe > title``). vitest
    skips what does not match and exits 0 when nothing failed: a miss reads as passed,
    which never makes a verdict. 0: passed; 1: a failure."""

    name: ClassVar[str] = "vitest"

    def select(self, test: str) -> str | None:
        parts = test.split(" > ")
        return " ".join(parts[1:] if len(parts) > 1 else parts).strip() or None

    def command(self, test_command: str, argument: str, expect: str = "pass") -> str:
        return f"{test_command} -t {shlex.quote(f'(^| ){re.escape(argument)}$')}"


class MochaRunner(Runner):
    """``mocha ... --grep '(^| )<title>$'`` (mocha matches the full title, its suites'
    titles and its own joined by spaces; eslint's keys end with ``:``). mocha exits with
    the number of failures (0: passed, or nothing matched: a miss reads as passed, which
    never makes a verdict)."""

    name: ClassVar[str] = "mocha"

    def select(self, test: str) -> str | None:
        title = test.removesuffix(":").strip()
        return title or None

    def canary(self, canary: Canary, directives: Sequence[str]) -> str | None:
        return canary.title if canary.style in {"js_it", "js_test"} else None

    def command(self, test_command: str, argument: str, expect: str = "pass") -> str:
        return f"{test_command} --grep {shlex.quote(f'(^| ){re.escape(argument)}$')}"


class CtestRunner(Runner):
    """``ctest ... -R '^<name>$'`` (GoogleTest's ``Suite.Test``, as
    ``gtest_discover_tests`` registers it). ctest exits 0 when nothing matched unless
    told ``--no-tests=error``: a FAIL_TO_PASS test alone reads a miss as passed (which
    never makes a verdict); a canary gets ``--no-tests=error``. 0: passed; 8: a failure."""

    name: ClassVar[str] = "ctest"

    def select(self, test: str) -> str | None:
        return test if re.fullmatch(r"[\w./-]+", test) else None

    def canary(self, canary: Canary, directives: Sequence[str]) -> str | None:
        return None  # no C or C++ canaries yet

    def command(self, test_command: str, argument: str, expect: str = "pass") -> str:
        strict = "" if expect == "pass" else " --no-tests=error"
        return f"{test_command} -R {shlex.quote(f'^{re.escape(argument)}$')}{strict}"


def _class_of(canary: Canary) -> str | None:
    """The class of a method canary: its neighbour's, or the one it defines."""
    if canary.test_class is not None:
        return canary.test_class
    return canary.defines[1] if len(canary.defines) > 1 else None


RUNNERS: dict[str, Runner] = {
    r.name: r
    for r in (
        PytestRunner(),
        UnittestRunner(),
        DjangoRunner(),
        PlainRunner(),
        GoRunner(),
        CargoRunner(),
        MavenRunner(),
        RspecRunner(),
        PhpUnitRunner(),
        JestRunner(),
        VitestRunner(),
        MochaRunner(),
        CtestRunner(),
    )
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
        command=runner.command(test_command, argument, expect),
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
