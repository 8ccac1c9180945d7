"""SWE-bench's Vitest parser (``parse_log_vitest``), reproduced quirk for quirk.

Expects ``vitest run --reporter=verbose`` output: one line per test, ``✓ file > describe
> title 12ms``, ``\\u00d7 ...`` (a multiplication sign), ``↓ ...`` (vitest 2 prints the
file and the ``describe`` blocks in the line). Every line is stripped and matched on its
own. Quirks kept because SWE-bench's lists were written with them:

* a trailing word of digits, optionally ending in ``ms`` or ``s`` (``12ms``, ``3``), is
  taken for the duration and cut off, even when it is the end of the test's title:
  ``name with spaces 12ms`` is key ``test/a.test.js > name with spaces``;
* vitest 2 prints no line for skipped and todo tests: they have no entry;
* a test file that fails to load prints no test lines: its tests have no entry;
* any line starting with ``✓``, ``\\u00d7`` or ``↓`` counts, wherever it comes from (a test's
  ``console.log`` output is printed unindented under ``stdout | ...``).

``suite_ran``: a parsed entry (none of swebench's other evidence of a run is something
vitest prints: its totals line, ``Tests  4 failed | 5 passed (11)``, has no colon).
"""

from __future__ import annotations

import re
from typing import ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.registry import register

FAILED_MARK = "\u00d7"  # vitest's "x", a multiplication sign
_RESULT = re.compile(r"^\s*(✓|" + FAILED_MARK + r"|↓)\s(.+?)(?:\s(\d+\s*m?s?|\[skipped\]))?$")
_STATUS = {"✓": Status.PASSED, FAILED_MARK: Status.FAILED, "↓": Status.SKIPPED}


@register
class VitestCompatParser(LogParser):
    name: ClassVar[str] = "vitest"
    ecosystems: ClassVar[tuple[str, ...]] = ("javascript",)
    family: ClassVar[Family] = Family.SWEBENCH
    canary_language: ClassVar[str | None] = "javascript"
    runner: ClassVar[str | None] = "vitest"
    aliases: ClassVar[tuple[str, ...]] = ("parse_log_vitest",)
    description: ClassVar[str] = (
        "SWE-bench's vitest --reporter=verbose parser: a trailing number is cut as a duration"
    )

    def parse(self, text: str) -> ParsedLog:
        statuses: dict[str, Status] = {}
        for line in text.split("\n"):
            match = _RESULT.match(line.strip())
            if match:
                symbol, test_name, _duration = match.groups()
                statuses[test_name] = _STATUS[symbol]
        return ParsedLog(statuses=statuses, suite_ran=bool(statuses))

    def command_advice(self, test_cmd: str) -> str | None:
        if "vitest" in test_cmd and "--reporter=verbose" not in test_cmd:
            return "vitest prints a line per test only with --reporter=verbose"
        return None
