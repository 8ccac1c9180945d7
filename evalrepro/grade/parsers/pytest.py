"""SWE-bench's pytest parser (``parse_log_pytest``), reproduced quirk for quirk.

Expects the output of ``pytest -rA`` (SWE-bench runs most repos with ``pytest
--no-header -rA --tb=no -p no:cacheprovider``). Rule: every line that *starts* with one
of SWE-bench's status words (FAILED PASSED SKIPPED ERROR XFAIL) records
``{second whitespace token: first token}``; a later line overwrites an earlier one. The
same function serves astroid, flask, marshmallow, pvlib, pytest, pyvista, sqlfluff and
xarray. Quirks kept, because SWE-bench's FAIL_TO_PASS / PASS_TO_PASS lists were written
with them (each was measured on real pytest 9 logs, see tests/corpus/pytest/):

* ids are cut at the first whitespace: ``test_x[a b]`` is key ``test_x[a``, so
  parametrized ids that agree up to their first space collapse into one key holding the
  status of the last of them printed; pytest prints PASSED summary lines before FAILED
  ones, so one failure marks them all failed (the ``big_param`` log: 1,000 tests, 40
  keys, 250 tests behind the 10 FAILED keys of which 240 passed);
* any line starting with a status word counts, wherever it comes from: captured log
  records (``ERROR    payments:test_x.py:8 boom`` is test ``payments:test_x.py:8``),
  output of the code under test (a printed ``PASSED x`` is a passing test x: SWE-bench
  issue 620), progress lines broken by test output (``PASSED [100%]`` is test
  ``[100%]``, which two pytest-dev instances list in PASS_TO_PASS), and ``XFAIL at setup
  of x - reason`` (``xfail(run=False)``), which is test ``at``;
* XPASS is not a SWE-bench status: an xpassed test is missing from the map;
* pytest's folded skip summary ``SKIPPED [N] file:line: reason`` is dropped ([N] is not
  a test), so with pytest's default folding no skipped test is recorded;
* a test listed twice keeps its last line: a teardown error after a pass is ERROR
  (ERROR lines follow PASSED ones), after a failure FAILED (FAILED lines come last);
* ``FAILED x - msg``: SWE-bench replaces " - " by a space before splitting, which only
  matters when the id itself is ``-``;
* lines are split on "\\n" only and must start at column 0: indented or coloured status
  words do not count;
* the status is the first token as printed, so ``ERROR: file or directory not found:
  x`` records key ``file`` with status ``ERROR:`` (and ``-s`` output without a newline
  gives tokens such as ``newlinePASSED``). Such tokens are kept verbatim, as swebench
  keeps them: its grading, and ours, counts them neither passed nor failed, and its
  exit-code check does not take ``ERROR:`` for a failure.

``suite_ran`` is whether the map is non-empty: swebench's grading has no pytest pattern
among its suite-ran signatures, so an empty pytest map is an invalid run there.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.registry import register

#: swebench's TestStatus: the words a line may start with (no XPASS).
SWEBENCH_STATUSES: tuple[Status, ...] = (
    Status.FAILED,
    Status.PASSED,
    Status.SKIPPED,
    Status.ERROR,
    Status.XFAIL,
)
_WORDS = tuple(str(status) for status in SWEBENCH_STATUSES)

# \d, not [0-9]: swebench's pattern also takes other scripts' digits.
_FOLDED_SKIP_COUNT = re.compile(r"^\[\d+\]$")


def is_folded_skip(status: str, name: str) -> bool:
    """pytest's ``SKIPPED [N] file:line: reason`` summary, whose [N] is a count, not a test."""
    return status == Status.SKIPPED and bool(_FOLDED_SKIP_COUNT.match(name))


def status_tokens(log: str, *, rewrite: dict[str, str] | None = None) -> Iterator[tuple[str, str]]:
    """(status token, test token) of each line swebench's pytest-style parsers accept.

    ``rewrite`` replaces substrings of each line first (matplotlib's MouseButton names).
    """
    for line in log.split("\n"):
        for old, new in (rewrite or {}).items():
            line = line.replace(old, new)
        if not line.startswith(_WORDS):
            continue
        if line.startswith(Status.FAILED):
            line = line.replace(" - ", " ")
        tokens = line.split()
        if len(tokens) <= 1 or is_folded_skip(tokens[0], tokens[1]):
            continue
        yield tokens[0], tokens[1]


@register
class SwebenchPytestParser(LogParser):
    name: ClassVar[str] = "pytest"
    ecosystems: ClassVar[tuple[str, ...]] = ("python",)
    runner: ClassVar[str | None] = "pytest"
    canary_styles: ClassVar[tuple[str, ...]] = ("function", "method")
    canary_language: ClassVar[str | None] = "python"
    family: ClassVar[Family] = Family.SWEBENCH
    # swebench binds these per-repo names to this very function.
    aliases: ClassVar[tuple[str, ...]] = (
        "parse_log_pytest",
        "astroid",
        "parse_log_astroid",
        "flask",
        "parse_log_flask",
        "marshmallow",
        "parse_log_marshmallow",
        "pvlib",
        "parse_log_pvlib",
        "pyvista",
        "parse_log_pyvista",
        "sqlfluff",
        "parse_log_sqlfluff",
        "xarray",
        "parse_log_xarray",
    )
    description: ClassVar[str] = (
        "SWE-bench's pytest parser (pytest -rA): lines starting with a status word, "
        "ids cut at the first space"
    )

    def parse(self, text: str) -> ParsedLog:
        statuses: dict[str, Status | str] = {name: word for word, name in status_tokens(text)}
        return ParsedLog(statuses=statuses, suite_ran=bool(statuses))
