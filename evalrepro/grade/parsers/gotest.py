"""SWE-bench's ``go test`` parser (``parse_log_gotest``), reproduced quirk for quirk.

Expects ``go test -v`` output: a ``--- PASS|FAIL|SKIP: name (0.00s)`` line per test and
subtest, subtests indented four spaces per level. Every line is stripped and matched on
its own; the key is Go's test name (``TestX/sub_name``, spaces already turned into
underscores by Go). Quirks kept because SWE-bench's lists were written with them:

* keys carry no package, so a test name present in several packages is one entry and the
  package printed last wins (``TestShared`` passing in one package and failing in the
  one printed after it is FAILED; the other way round, PASSED);
* a result line that does not start its line is missed: a test whose output does not
  end in a newline (``fmt.Print("x")``) prints ``x--- PASS: TestY (0.00s)``, and TestY
  has no entry;
* what never printed a result line has no entry: tests of a package that did not build
  (``FAIL pkg [build failed]``), the tests after one that panicked, a failing
  ``TestMain``;
* any line shaped like a result counts, wherever it comes from: a test printing
  ``--- PASS: TestInvented (0.00s)`` invents a passing test.

``suite_ran``: a parsed result line (swebench's grading has no alternative for Go).
"""

from __future__ import annotations

import re
from typing import ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.registry import register

_RESULT = re.compile(r"^--- (PASS|FAIL|SKIP): (.+) \((.+)\)$")
_STATUS = {"PASS": Status.PASSED, "FAIL": Status.FAILED, "SKIP": Status.SKIPPED}


@register
class GoTestCompatParser(LogParser):
    name: ClassVar[str] = "gotest"
    ecosystems: ClassVar[tuple[str, ...]] = ("go",)
    family: ClassVar[Family] = Family.SWEBENCH
    canary_language: ClassVar[str | None] = "go"
    runner: ClassVar[str | None] = "go"
    aliases: ClassVar[tuple[str, ...]] = ("parse_log_gotest",)
    description: ClassVar[str] = (
        "SWE-bench's go test -v parser: --- PASS/FAIL/SKIP lines, keys without the package"
    )

    def parse(self, text: str) -> ParsedLog:
        statuses: dict[str, Status] = {}
        # split("\n") rather than splitlines(): swebench's lines only end at "\n".
        for line in text.split("\n"):
            match = _RESULT.match(line.strip())
            if match:
                outcome, test_name, _duration = match.groups()
                statuses[test_name] = _STATUS[outcome]
        return ParsedLog(statuses=statuses, suite_ran=bool(statuses))

    def command_advice(self, test_cmd: str) -> str | None:
        if "go test" in test_cmd and not re.search(r"(^|\s)-v(\s|$)", test_cmd):
            return "go test prints a line per test only with -v"
        return None
