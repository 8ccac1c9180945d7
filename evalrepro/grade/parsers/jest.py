"""SWE-bench's Jest parser (``parse_log_jest``), reproduced quirk for quirk.

Expects ``jest --verbose`` output: per test file a ``PASS``/``FAIL`` header and an
indented tree of ``describe`` titles with one line per test, ``✓ title (5 ms)``,
``✕ title``, ``○ skipped title``, ``✎ todo title``. Every line is stripped and matched
on its own; the key is the rest of the line, the duration cut off. Quirks kept because
SWE-bench's lists were written with them:

* the key is the test's own title, without its ``describe`` blocks or its file: tests of
  one title in several blocks or files are one entry, the one printed last winning;
* skipped tests are keyed ``skipped <title>`` (jest prints the word), and ``todo`` tests
  have no entry;
* a test file that fails to run (a syntax error, a throwing import) prints no test
  lines: its tests have no entry;
* any line starting with ``✓``, ``✕`` or ``○`` counts, wherever it comes from (a test's
  ``console.log`` output is printed in the log too).

``suite_ran``: a parsed entry, or jest's ``Tests: N`` totals line (swebench's grading
accepts ``Tests:\\s+[1-9]``).
"""

from __future__ import annotations

import re
from typing import ClassVar

from evalrepro.grade.parsers.base import Family, LogParser, ParsedLog, Status
from evalrepro.grade.parsers.registry import register

_RESULT = re.compile(r"^\s*(✓|✕|○)\s(.+?)(?:\s\((\d+\s*m?s)\))?$")
_STATUS = {"✓": Status.PASSED, "✕": Status.FAILED, "○": Status.SKIPPED}
# swebench's SUITE_RAN alternatives that jest prints; unanchored, as there.
_TOTALS = re.compile(r"Tests:\s+[1-9]\d*|Test Suites:\s+(?:\d+ \w+, )*[1-9]\d* total")


@register
class JestCompatParser(LogParser):
    name: ClassVar[str] = "jest"
    ecosystems: ClassVar[tuple[str, ...]] = ("javascript",)
    family: ClassVar[Family] = Family.SWEBENCH
    canary_language: ClassVar[str | None] = "javascript"
    runner: ClassVar[str | None] = "jest"
    aliases: ClassVar[tuple[str, ...]] = ("parse_log_jest",)
    description: ClassVar[str] = (
        "SWE-bench's jest --verbose parser: keys are bare test titles, skips renamed"
    )

    def parse(self, text: str) -> ParsedLog:
        statuses: dict[str, Status] = {}
        for line in text.split("\n"):
            match = _RESULT.match(line.strip())
            if match:
                symbol, test_name, _duration = match.groups()
                statuses[test_name.strip()] = _STATUS[symbol]
        return ParsedLog(statuses=statuses, suite_ran=bool(statuses) or bool(_TOTALS.search(text)))

    def command_advice(self, test_cmd: str) -> str | None:
        if "jest" in test_cmd and "--verbose" not in test_cmd:
            return "jest prints a line per test only with --verbose"
        return None
