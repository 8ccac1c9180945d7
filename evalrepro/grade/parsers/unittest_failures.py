"""Native FAIL_ONLY parser for unittest's default output: ``python -m unittest``.

At verbosity 1 the runner prints a dot (or ``F``/``E``/``s``/``x``/``u``) per outcome and
names only what went wrong, in error blocks after a line of 70 ``=``::

    FAIL: test_x (pkg.mod.Class.test_x)
    ERROR: setUpClass (pkg.mod.Class)
    UNEXPECTED SUCCESS: test_y (pkg.mod.Class.test_y)      (Python 3.11+)

then ``Ran N tests in 0.01s`` and ``OK`` / ``FAILED (failures=1, errors=2, ...)``.
The map holds those outcomes only (FAILED, ERROR, XPASS), with the ids of the verbose
parser (``unittest``): a subtest's parent is FAILED too. A test missing from the map
passed, provided the suite ran: ``suite_ran`` needs ``Ran N tests`` with N >= 1.

Cross-check: the result line's ``failures``, ``errors`` and (when the log has
``UNEXPECTED SUCCESS`` blocks, i.e. Python 3.11+) ``unexpected successes`` must equal
the blocks read; a disagreement is a problem.
"""

from __future__ import annotations

from typing import ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog
from evalrepro.grade.parsers.registry import register
from evalrepro.grade.parsers.unittest import TextRunnerLog


@register
class UnittestFailuresParser(LogParser):
    name: ClassVar[str] = "unittest_failures"
    ecosystems: ClassVar[tuple[str, ...]] = ("python",)
    canary_styles: ClassVar[tuple[str, ...]] = ("method",)
    canary_language: ClassVar[str | None] = "python"
    family: ClassVar[Family] = Family.NATIVE
    fail_only: ClassVar[bool] = True
    description: ClassVar[str] = "python -m unittest (verbosity 1: only failures are named)"

    def parse(self, text: str) -> ParsedLog:
        log = TextRunnerLog(text, progress=False)
        return ParsedLog(
            statuses=log.statuses(), suite_ran=log.tests_ran(), problems=log.problems()
        )
