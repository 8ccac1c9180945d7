"""The second runner: FAIL_TO_PASS tests run once more without their test framework.

Library code can tell that it runs under a test framework (``pytest`` or ``unittest`` in
``sys.modules``, ``PYTEST_CURRENT_TEST`` in the environment, ``sys.argv``, the
``__main__`` module, the runner's frames on the stack) and return the right answer only
there. With ``protection.second_runner: N``, after the run (and with the fresh runs) the
supervisor runs up to N of the instance's FAIL_TO_PASS tests (drawn per trial) each alone
in a fresh process by a plain driver (``evalrepro/sandbox/plain.py``), from the same
verified state the fresh runs start from: no framework module left in ``sys.modules``
when the test is called, no ``PYTEST_*`` variables, no arguments, no runner on the stack
(a pytest test is called directly, a ``unittest.TestCase`` method through unittest's
suite), and one must-fail canary the same way. A FAIL_TO_PASS test the log calls
passing that fails under the driver makes the trial invalid (``differs_under_test``); a
must-fail canary that passes under it, ``runner_tampered``.

Only where the test allows a plain run, decided by the driver from the verified files
before any code of the repository runs (``PlainRunner``: exit 3, no judgement): a test
function or a method of a plain class with no fixtures but ``tmp_path``, no pytest
decorator that changes how it runs, no autouse fixture, no conftest that runs code or
hooks, no pytest configuration or plugin that changes a run; a ``TestCase`` method
always (under ``python -m unittest``). The test command must be the runner's own
(``pytest ...``, ``python -m pytest ...``, ``python -m unittest ...``): the driver is
started as ``python3`` of the test run's ``PATH``. What it cannot see is in the threat
model (code that looks for the harness rather than the framework, or for a test file
among its callers). It costs one interpreter start and one import of the test module per
test (``benchmarks/second_runner.py``).
"""

from __future__ import annotations

import random
import re
import secrets
import shlex
from collections.abc import Sequence

from evalrepro.grade.fresh import RUNNERS
from evalrepro.grade.parsers import LogParser
from evalrepro.records.canary import Canary
from evalrepro.records.fresh import FreshRun
from evalrepro.records.testspec import TestSpec
from evalrepro.sample import Sample
from evalrepro.sandbox import PLAIN_DRIVER

#: The driver's source, run as ``python3 -I -S -c`` (it is the harness's: in its digest).
DRIVER = PLAIN_DRIVER.read_text(encoding="utf-8")

#: Per first runner: the driver's style, and the test command it can stand in for
#: (group 1: ``-m``, the working folder first on the path, as ``python -m`` puts it).
SECOND_RUNNERS: dict[str, tuple[str, re.Pattern[str]]] = {
    "pytest": ("pytest", re.compile(r"\s*(?:python3?\s+(-m)\s+pytest|pytest|py\.test)(?:\s|$)")),
    "unittest": ("unittest", re.compile(r"\s*python3?\s+(-m)\s+unittest(?:\s|$)")),
}


#: Options of the test command that change how a selected test runs (plugins, import
#: rules, the root and its conftests), which a plain run would not repeat.
_CHANGING_OPTIONS = ("--import-mode", "--rootdir", "--confcutdir", "--noconftest", "--pyargs",
                     "--ds", "--dc", "--config-file", "-c", "--doctest-modules")  # fmt: skip


def _options_that_change(command: str) -> str | None:
    """The first option of ``command`` that a plain run would not repeat: a plugin
    loaded (``-p NAME``; ``-p no:NAME`` only turns one off) or one of ``_CHANGING_OPTIONS``."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    for index, word in enumerate(words):
        if word == "-p":
            name = words[index + 1] if index + 1 < len(words) else ""
            if not name.startswith("no:"):
                return f"-p {name}".strip()
        elif word.startswith("-p") and not word[2:].startswith("no:"):  # -pNAME
            return word
        elif any(word == o or word.startswith(o + "=") for o in _CHANGING_OPTIONS):
            return word
    return None


def draw_second_runs(
    spec: TestSpec,
    parser: LogParser,
    sample: Sample,
    canaries: Sequence[Canary],
    rng: random.Random | None = None,
) -> tuple[list[FreshRun], str]:
    """The trial's runs under the second runner, and why there are none when the dataset
    asked for some."""
    wanted = spec.eval_script.protection.second_runner
    if wanted == 0:
        return [], ""
    first = RUNNERS.get(parser.runner or "")
    if first is None or first.name not in SECOND_RUNNERS:
        return [], f"second runner: parser {parser.name}'s runner has no plain driver"
    style, command = SECOND_RUNNERS[first.name]
    shape = command.match(spec.test_cmd)
    if shape is None:
        return [], (
            f"second runner: the test command is not the {first.name} runner's own "
            "(an environment or a wrapper the driver cannot repeat)"
        )
    cwd_first = shape.group(1) is not None
    changing = _options_that_change(spec.test_cmd)
    if changing:
        return [], f"second runner: the test command's {changing} changes what the runner runs"

    def plain(test: str, argument: str, expect: str = "pass") -> FreshRun:
        return FreshRun(
            test=test,
            expect=expect,  # type: ignore[arg-type]
            command=(
                f"python3 -I -S -c {shlex.quote(DRIVER)} {style} {int(cwd_first)} "
                f"{shlex.quote(argument)}"
            ),
            runner="plain",
        )

    canary = None
    for candidate in canaries:
        if candidate.expect != "fail" or candidate.twin_of is not None:
            continue
        argument = first.canary(candidate, spec.test_directives)
        if argument is not None:
            canary = plain(candidate.name, argument, expect="fail")
            break
    if canary is None:
        # Without a must-fail canary beside them, a process that always exits 0 would pass.
        return [], "second runner: no must-fail canary to run beside the FAIL_TO_PASS tests"
    selectable = [
        (test, argument)
        for test in sample.fail_to_pass
        if (argument := first.select(test)) and "[" not in argument
    ]
    if not selectable:
        return [], "second runner: no FAIL_TO_PASS test is one the plain driver can select"
    rng = rng or random.SystemRandom(secrets.randbits(64))
    chosen = rng.sample(selectable, min(wanted, len(selectable)))
    runs = [plain(test, argument) for test, argument in chosen]
    runs.append(canary)
    rng.shuffle(runs)  # the canary's place among them is not known in advance
    return runs, ""
