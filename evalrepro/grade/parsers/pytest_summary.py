"""pytest, terminal-bench's way: only the short test summary, outcomes folded to pass/fail.

Invocation: ``pytest -rA`` (terminal-bench tasks run ``pytest -rA``; add
``--no-fold-skipped`` to name skipped tests). terminal-bench's ``PytestParser`` trusts
nothing but the "short test summary info" section, because progress lines and
tracebacks also contain PASSED/FAILED, and folds pytest's outcomes into two, for a
task that asks "do all the task's tests pass?":

* PASSED, XFAIL, SKIPPED -> PASSED: an expected failure or a deliberate skip is not
  the solution's fault;
* FAILED, ERROR, XPASS -> FAILED: an unexpected pass means the test does not test what
  it declares, and an error means it could not run.

Written after terminal-bench's rule, not copied; where evalrepro departs from it:

* ids are full node ids; terminal-bench drops the file part (``test_a.py::test_x`` is
  ``test_x``), so equal test names in two files collide;
* every status line loses its `` - message``; terminal-bench cuts FAILED lines only,
  at their *last* " - " (so a message holding " - " leaves its head in the id), its
  XFAIL/XPASS/ERROR ids carry the reason, and a folded ``SKIPPED [1] file:line:
  reason`` line becomes a passing "test" named ``[1] file:line: reason``. Here folded
  skips name no test: a skipped test is missing unless pytest ran with
  ``--no-fold-skipped``;
* the summary read is the last one before pytest's totals line, not the first header
  in the log, so a header printed by a test cannot open the region early;
* a test listed twice keeps FAILED if either line folds to FAILED (terminal-bench: the
  later line wins, which pytest's summary order makes the same for real reports);
* ``problems`` as in ``pytest_full``: missing totals line or summary, counts that
  disagree with the totals line (terminal-bench raises only on a missing summary).

``suite_ran``: as ``pytest_full``, from the totals line.
"""

from __future__ import annotations

from typing import ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.pytest_report import (
    entry_nodeid,
    read_report,
    suite_ran,
    totals_problems,
)
from evalrepro.grade.parsers.registry import register

FOLDED: dict[Status, Status] = {
    Status.PASSED: Status.PASSED,
    Status.XFAIL: Status.PASSED,
    Status.SKIPPED: Status.PASSED,
    Status.FAILED: Status.FAILED,
    Status.ERROR: Status.FAILED,
    Status.XPASS: Status.FAILED,
}


@register
class PytestSummaryParser(LogParser):
    name: ClassVar[str] = "pytest_summary"
    ecosystems: ClassVar[tuple[str, ...]] = ("python",)
    runner: ClassVar[str | None] = "pytest"
    canary_styles: ClassVar[tuple[str, ...]] = ("function", "method")
    canary_language: ClassVar[str | None] = "python"
    family: ClassVar[Family] = Family.NATIVE
    description: ClassVar[str] = (
        "pytest -rA, terminal-bench style: the short test summary only, "
        "XFAIL/SKIPPED -> PASSED, ERROR/XPASS -> FAILED"
    )

    def parse(self, text: str) -> ParsedLog:
        report = read_report(text)
        statuses: dict[str, Status] = {}
        for entry in report.entries:
            nodeid = entry_nodeid(entry)
            if statuses.get(nodeid) is not Status.FAILED:
                statuses[nodeid] = FOLDED[entry.status]
        return ParsedLog(
            statuses=statuses,
            suite_ran=suite_ran(report, statuses),
            problems=tuple(totals_problems(report)),
        )
