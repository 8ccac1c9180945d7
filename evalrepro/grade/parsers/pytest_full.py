"""pytest, every test right: full node ids, XPASS, skips, setup errors, xdist.

Invocation: ``pytest -rA -v`` (``-rA`` is required: the summary must list passed tests;
``-v`` names skipped tests, which pytest's summary folds into ``SKIPPED [N] file:line``
lines, and settles ids that hold " - "; ``--no-fold-skipped`` instead of ``-v`` also
names them). ``-vv``, ``-q``, ``-n N`` (pytest-xdist), ``--tb=...``, ``-s`` and colour
work; ``-qq`` does not (it prints no totals line to check against).

The map comes from the short test summary at the end of the run only (see
:mod:`evalrepro.grade.parsers.pytest_report`), so output of the code under test, captured
log records and pytester sessions cannot add or change tests. Ids are pytest's node ids
verbatim, spaces, brackets, escapes (pytest prints ``é`` in a parameter as ``\\xe9``) and
" - " included. One status per id: a test with a setup/teardown error is ERROR (also
when its call passed or failed), as in pytest's JUnit XML; a skipped test is named by
its ``-v`` progress line. An xpassed test is XPASS, a strict xpass FAILED, a
collection error ERROR under the file's id (``test_x.py``). pytest 9's subtests are not
tests: their test's entry is its own outcome (FAILED when a subtest failed), as in
JUnit, and their ``SUB...`` lines only count towards the totals cross-check.

``problems``: the totals line is missing (the run did not finish), the summary is
missing (no ``-rA``), the totals line disagrees with the summary's lines per outcome
(a forged status line inside the summary region, e.g. in a multi-line ``-vv``
message), a test is listed with two different outcomes (other than an ERROR next to
its call's outcome), or skipped tests cannot all be named. ``suite_ran``: the totals
line counts a test that ran (passed, failed, skipped, xfailed, xpassed), or the map
names a test (an id with ``::``: a collection error alone names a file, not a test).

Beyond any log parser: a process that writes a whole fake report after pytest exits,
or a ``conftest.py`` that rewrites reports; the recorded exit code is the check there.
"""

from __future__ import annotations

import shlex
from collections import defaultdict
from typing import ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.pytest_report import (
    PytestReport,
    entry_nodeid,
    read_report,
    suite_ran,
    totals_problems,
)
from evalrepro.grade.parsers.registry import register

# When one id is listed with several outcomes, the worse one stands: an ERROR next to a
# call outcome is pytest's own teardown/setup error; anything else is a conflict that
# is also reported, and a forged PASSED must never hide a real failure.
_WORST_FIRST = (
    Status.ERROR,
    Status.FAILED,
    Status.XPASS,
    Status.SKIPPED,
    Status.XFAIL,
    Status.PASSED,
)


@register
class PytestFullParser(LogParser):
    name: ClassVar[str] = "pytest_full"
    ecosystems: ClassVar[tuple[str, ...]] = ("python",)
    runner: ClassVar[str | None] = "pytest"
    canary_styles: ClassVar[tuple[str, ...]] = ("function", "method")
    canary_language: ClassVar[str | None] = "python"
    family: ClassVar[Family] = Family.NATIVE
    description: ClassVar[str] = (
        "pytest -rA -v: full node ids from the short test summary, skips from -v lines, "
        "XPASS kept, cross-checked with the totals line"
    )

    def command_advice(self, test_cmd: str) -> str | None:
        flags = pytest_flags(test_cmd)
        if flags is None:
            return None
        missing = []
        if not flags.reports_passed:
            missing.append("-rA (the summary must list passed tests)")
        if not flags.names_skips:
            missing.append("-v or --no-fold-skipped (to name skipped tests; a log with "
                           "unnamed skips is unscorable)")  # fmt: skip
        return f"{self.name} needs {' and '.join(missing)}" if missing else None

    def parse(self, text: str) -> ParsedLog:
        report = read_report(text)
        problems = totals_problems(report)
        known = {line.nodeid for line in report.progress if not line.subtest}
        listed: dict[str, set[Status]] = defaultdict(set)
        for entry in report.entries:
            listed[entry_nodeid(entry, known)].add(entry.status)
        if report.folded_skips:
            problems += _name_folded_skips(report, listed)
        statuses: dict[str, Status] = {}
        for nodeid, seen in listed.items():
            if len(seen - {Status.ERROR}) > 1:
                problems.append(f"{nodeid} is listed as {' and '.join(sorted(seen))} at once")
            statuses[nodeid] = next(s for s in _WORST_FIRST if s in seen)
        return ParsedLog(
            statuses=statuses, suite_ran=suite_ran(report, statuses), problems=tuple(problems)
        )


def _name_folded_skips(report: PytestReport, listed: dict[str, set[Status]]) -> list[str]:
    """Add the tests behind folded ``SKIPPED [N]`` lines, named by their progress lines."""
    skips = [line for line in report.progress if line.status is Status.SKIPPED]
    tests = dict.fromkeys(line.nodeid for line in skips if not line.subtest)
    for nodeid in tests:
        listed[nodeid].add(Status.SKIPPED)
    # pytest folds subtests' skips in with the tests'; each has its own progress line.
    named = len(tests) + sum(1 for line in skips if line.subtest)
    if named == report.folded_skips:
        return []
    return [
        f"{report.folded_skips} tests were skipped but {named} are named by progress "
        "lines: run pytest with -v or --no-fold-skipped"
    ]


#: pytest's short options that take a value (the rest of the token is that value).
_TAKES_VALUE = frozenset("pkmcoWn")


class PytestFlags:
    """What a pytest command line visibly asks for (pytest's own short-flag grammar:
    ``-vrA`` is ``-v -rA``; ``-r`` takes the rest of its token, or the next one)."""

    def __init__(self, tokens: list[str]) -> None:
        verbosity, report_chars = 0, ""
        for index, token in enumerate(tokens):
            if token in ("--verbose",):
                verbosity += 1
            elif token in ("--quiet",):
                verbosity -= 1
            elif token == "--no-fold-skipped":
                verbosity += 10
            elif token.startswith("-") and not token.startswith("--"):
                for position, char in enumerate(token[1:], start=1):
                    if char == "v":
                        verbosity += 1
                    elif char == "q":
                        verbosity -= 1
                    elif char == "r":
                        rest = token[position + 1 :]
                        if not rest and index + 1 < len(tokens):
                            rest = tokens[index + 1]
                        report_chars += rest
                        break
                    elif char in _TAKES_VALUE or not char.isalpha():
                        break
        self.reports_passed = "A" in report_chars or "P" in report_chars
        self.names_skips = verbosity > 0


def pytest_flags(test_cmd: str) -> PytestFlags | None:
    """The flags of a command that runs pytest itself (``pytest ...``, ``python -m pytest
    ...``), else None: a wrapper script's flags cannot be seen."""
    try:
        tokens = shlex.split(test_cmd)
    except ValueError:
        return None
    for index, token in enumerate(tokens):
        if token.rsplit("/", 1)[-1] in ("pytest", "py.test"):
            return PytestFlags(tokens[index + 1 :])
        if token == "-m" and tokens[index + 1 : index + 2] == ["pytest"]:
            return PytestFlags(tokens[index + 2 :])
    return None
