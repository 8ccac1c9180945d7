"""Native Jest parser: the report of ``jest --json``, every test keyed by file and blocks.

Expects the output of ``jest --json 2>&1``: jest's human-readable report (on stderr)
and, on a line of its own, the JSON report (on stdout). A test's ``console.log`` output
is printed indented, so it never starts a line with ``{``. ``vitest run
--reporter=json`` writes the same report (its skipped tests say ``skipped``), so this
parser reads vitest's too.

Ids: ``<test file>::<describe> > ... > <title>``, the file as jest reports it (an
absolute path: ``/testbed/src/a.test.js``), so tests of one title in several blocks or
files are several tests. An id that occurs again (one title twice in one block) gets
`` [#2]``, `` [#3]``... appended, in report order.

Statuses: ``passed`` -> PASSED, ``failed`` -> FAILED, ``pending`` (skipped),
``todo`` and ``disabled`` -> SKIPPED. A test file that failed without running a test
(a syntax error, a throwing import, a failing ``beforeAll`` in some versions) is an
ERROR under the file's path.

Cross-checks, each a problem: exactly one report (a test can write a forged one on
stdout; a later report's entries overwrite an earlier one's); each report's totals
(``numTotalTests``, ``numPassedTests``, ``numFailedTests``, ``numPendingTests``,
``numTodoTests``) match its tests. ``suite_ran``: some test in the report.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.registry import register

SEPARATOR = "::"
NESTING = " > "

_STATUS = {
    "passed": Status.PASSED,
    "failed": Status.FAILED,
    "pending": Status.SKIPPED,
    "todo": Status.SKIPPED,
    "disabled": Status.SKIPPED,
    "skipped": Status.SKIPPED,
}
# Report total -> the test statuses it counts (None: all); vitest says "skipped".
_TOTALS: dict[str, tuple[str, ...] | None] = {
    "numTotalTests": None,
    "numPassedTests": ("passed",),
    "numFailedTests": ("failed",),
    "numPendingTests": ("pending", "skipped", "disabled"),
    "numTodoTests": ("todo",),
}


def _reports(text: str) -> list[tuple[int, dict[str, Any]]]:
    found = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.startswith("{") or '"testResults"' not in line:
            continue
        try:
            report = json.loads(line)
        except ValueError:
            continue
        if isinstance(report, dict) and isinstance(report.get("testResults"), list):
            found.append((number, report))
    return found


@register
class JestJsonParser(LogParser):
    name: ClassVar[str] = "jest_json"
    ecosystems: ClassVar[tuple[str, ...]] = ("javascript",)
    family: ClassVar[Family] = Family.NATIVE
    canary_language: ClassVar[str | None] = "javascript"
    runner: ClassVar[str | None] = "jest"
    description: ClassVar[str] = (
        "jest --json or vitest --reporter=json: ids <file>::<describe> > <title>"
    )

    def parse(self, text: str) -> ParsedLog:
        reports = _reports(text)
        problems: list[str] = []
        if len(reports) > 1:
            lines = ", ".join(str(number) for number, _ in reports)
            problems.append(f"{len(reports)} jest JSON reports (lines {lines}); jest writes one")
        statuses: dict[str, Status] = {}
        ran = False
        # A later report overwrites an earlier one's entries (jest's own comes last).
        for _, report in reports:
            seen: Counter[str] = Counter()
            counted: Counter[str] = Counter()
            for result in report["testResults"]:
                path = str(result.get("name", ""))
                assertions = result.get("assertionResults") or []
                if not assertions and result.get("status") == "failed":
                    statuses[path] = Status.ERROR
                for test in assertions:
                    raw = str(test.get("status"))
                    counted[raw] += 1
                    titles = [*test.get("ancestorTitles", []), test.get("title", "")]
                    test_id = f"{path}{SEPARATOR}{NESTING.join(map(str, titles))}"
                    seen[test_id] += 1
                    if seen[test_id] > 1:
                        test_id = f"{test_id} [#{seen[test_id]}]"
                    statuses[test_id] = _STATUS.get(raw, Status.ERROR)
            for key, counts in _TOTALS.items():
                claimed = report.get(key)
                shown = sum(counted[c] for c in counts or counted)
                if isinstance(claimed, int) and claimed != shown:
                    problems.append(f"jest's report says {key} {claimed}, its tests show {shown}")
            ran = ran or sum(counted.values()) > 0
        return ParsedLog(statuses=statuses, suite_ran=ran, problems=tuple(problems))

    def command_advice(self, test_cmd: str) -> str | None:
        if "jest" in test_cmd and "--json" not in test_cmd:
            return "this parser reads jest's --json report"
        return None
